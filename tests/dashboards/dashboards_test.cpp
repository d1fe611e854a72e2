// dashboards/*.json are valid Grafana dashboards wired to the provisioned Prometheus data source,
// and every spotlight_* metric a panel queries is exported by some service: the exported names
// are the metric-name string literals in services/ and common/ (histograms add _bucket, _sum and
// _count). A panel whose metric lands later must wait for it. Text panels (HTML, e.g. the newest
// validation grid) use only dashboard variables that exist and paths some service serves.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

fs::path source_dir() {
  const char* dir = std::getenv("SPOTLIGHT_SOURCE_DIR");
  return dir ? fs::path(dir) : fs::path(".");
}

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// spotlight_* identifiers in a PromQL expression (label values in quotes are not metrics).
std::set<std::string> metric_names(const std::string& expr) {
  static const std::regex quoted("\"[^\"]*\"");
  static const std::regex name("\\bspotlight_[a-z0-9_]+\\b");
  const std::string bare = std::regex_replace(expr, quoted, "\"\"");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(bare.begin(), bare.end(), name); it != std::sregex_iterator();
       ++it)
    names.insert(it->str());
  return names;
}

// Metric names the services register: "spotlight_..." string literals in their sources, and
// names a shared component builds from its registry's service ("spotlight_" + service + "_x"):
// in a file that builds such a prefix, every "_x" literal is taken as exported by every service
// that creates a Registry (Registry>("name") / Registry("name")).
std::set<std::string> exported_names(const fs::path& root) {
  static const std::regex literal("\"(spotlight_[a-z0-9_]+)\"");
  static const std::regex suffix("\"(_[a-z0-9_]+)\"");
  static const std::regex registry("Registry>?\\(\"([a-z][a-z0-9]*)\"\\)");
  std::set<std::string> names, services, suffixes;
  for (const char* folder : {"services", "common"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
      const auto ext = entry.path().extension();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp")) continue;
      const std::string text = read(entry.path());
      for (auto it = std::sregex_iterator(text.begin(), text.end(), literal);
           it != std::sregex_iterator(); ++it)
        names.insert((*it)[1].str());
      for (auto it = std::sregex_iterator(text.begin(), text.end(), registry);
           it != std::sregex_iterator(); ++it)
        services.insert((*it)[1].str());
      if (text.find("\"spotlight_\" +") == std::string::npos) continue;
      for (auto it = std::sregex_iterator(text.begin(), text.end(), suffix);
           it != std::sregex_iterator(); ++it)
        suffixes.insert((*it)[1].str());
    }
  }
  for (const auto& service : services)
    for (const auto& s : suffixes)
      names.insert("spotlight_" + service + s);
  return names;
}

bool is_exported(const std::string& name, const std::set<std::string>& exported) {
  if (exported.count(name)) return true;
  for (const std::string suffix : {"_bucket", "_sum", "_count"}) {
    if (name.size() > suffix.size() && name.ends_with(suffix) &&
        exported.count(name.substr(0, name.size() - suffix.size())))
      return true;
  }
  return false;
}

std::vector<fs::path> dashboard_files() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(source_dir() / "dashboards")) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string provisioned_datasource_uid() {
  const YAML::Node node = YAML::LoadFile(
      (source_dir() / "deploy/grafana/provisioning/datasources/prometheus.yaml").string());
  return node["datasources"][0]["uid"].as<std::string>();
}

TEST(MetricNames, ExtractsIdentifiersNotLabelValues) {
  EXPECT_EQ(metric_names("sum(rate(spotlight_explorer_tasks_completed_total[1m])) / "
                         "max(spotlight_trainer_weights_version{job=\"spotlight_fake\"})"),
            (std::set<std::string>{"spotlight_explorer_tasks_completed_total",
                                   "spotlight_trainer_weights_version"}));
  EXPECT_TRUE(metric_names("count(up{job=\"explorer\"} == 1)").empty());
}

TEST(MetricNames, SourcesExportEveryServicesMetricsAndNotUnknownOnes) {
  const auto exported = exported_names(source_dir());
  for (const char* name :
       {"spotlight_trainer_validation_score", "spotlight_planner_queue_depth",
        "spotlight_explorer_samples_per_second", "spotlight_reward_requests_total"}) {
    EXPECT_TRUE(is_exported(name, exported)) << name;
  }
  EXPECT_TRUE(is_exported("spotlight_trainer_iteration_seconds_bucket", exported));
  // Built from the registry's service by common/cost's reporter.
  EXPECT_TRUE(is_exported("spotlight_explorer_cost_total", exported));
  // The check fails for a metric no service exports (a panel added before its metric landed).
  EXPECT_FALSE(is_exported("spotlight_trainer_no_such_metric", exported));
  EXPECT_FALSE(is_exported("spotlight_trainer_no_such_metric_sum", exported));
}

TEST(Dashboards, AreValidGrafanaDashboardsOnTheProvisionedDatasource) {
  const auto files = dashboard_files();
  ASSERT_GE(files.size(), 3u) << "run overview, exploration and systems dashboards expected";
  const std::string datasource = provisioned_datasource_uid();
  std::set<std::string> uids;
  for (const auto& file : files) {
    SCOPED_TRACE(file.filename().string());
    Json board;
    ASSERT_NO_THROW(board = Json::parse(read(file))) << "not JSON";
    ASSERT_TRUE(board.is_object());
    ASSERT_TRUE(board.contains("uid") && board["uid"].is_string());
    EXPECT_TRUE(uids.insert(board["uid"].get<std::string>()).second) << "duplicate uid";
    EXPECT_FALSE(board.value("title", "").empty());
    EXPECT_TRUE(board.contains("schemaVersion") && board["schemaVersion"].is_number_integer());
    ASSERT_TRUE(board.contains("panels") && board["panels"].is_array());
    ASSERT_FALSE(board["panels"].empty());
    std::set<int> ids;
    std::vector<std::array<int, 4>> boxes;
    for (const auto& panel : board["panels"]) {
      const std::string title = panel.value("title", "");
      SCOPED_TRACE(title);
      EXPECT_FALSE(title.empty());
      ASSERT_TRUE(panel.contains("id") && panel["id"].is_number_integer());
      EXPECT_TRUE(ids.insert(panel["id"].get<int>()).second) << "duplicate panel id";
      const std::string type = panel.value("type", "");
      EXPECT_TRUE(type == "timeseries" || type == "stat" || type == "text") << type;
      const auto& g = panel["gridPos"];
      ASSERT_TRUE(g.is_object());
      const std::array<int, 4> box = {g.value("x", -1), g.value("y", -1), g.value("w", 0),
                                      g.value("h", 0)};
      EXPECT_TRUE(box[0] >= 0 && box[1] >= 0 && box[2] > 0 && box[3] > 0 && box[0] + box[2] <= 24);
      for (const auto& other : boxes) {
        const bool overlap = box[0] < other[0] + other[2] && other[0] < box[0] + box[2] &&
                             box[1] < other[1] + other[3] && other[1] < box[1] + box[3];
        EXPECT_FALSE(overlap) << "panels overlap";
      }
      boxes.push_back(box);
      if (type == "text") {
        ASSERT_TRUE(panel.contains("options") && panel["options"].is_object());
        EXPECT_EQ(panel["options"].value("mode", ""), "html");
        EXPECT_FALSE(panel["options"].value("content", "").empty());
        continue;
      }
      EXPECT_EQ(panel["datasource"].value("uid", ""), datasource);
      ASSERT_TRUE(panel.contains("targets") && panel["targets"].is_array());
      ASSERT_FALSE(panel["targets"].empty());
      std::set<std::string> refs;
      for (const auto& target : panel["targets"]) {
        EXPECT_FALSE(target.value("expr", "").empty());
        EXPECT_TRUE(refs.insert(target.value("refId", "")).second) << "duplicate refId";
        EXPECT_EQ(target["datasource"].value("uid", ""), datasource);
      }
    }
  }
}

TEST(Dashboards, QueryOnlyMetricsSomeServiceExports) {
  const auto exported = exported_names(source_dir());
  std::map<std::string, std::string> missing;  // metric -> where
  std::size_t queried = 0;
  for (const auto& file : dashboard_files()) {
    const Json board = Json::parse(read(file));
    for (const auto& panel : board["panels"]) {
      if (!panel.contains("targets")) continue;  // a text panel
      for (const auto& target : panel["targets"]) {
        for (const auto& name : metric_names(target["expr"].get<std::string>())) {
          ++queried;
          if (!is_exported(name, exported)) {
            missing[name] = file.filename().string() + " / " + panel["title"].get<std::string>();
          }
        }
      }
    }
  }
  EXPECT_GT(queried, 0u);
  for (const auto& [name, where] : missing) {
    ADD_FAILURE() << where << " queries " << name << ", which no service exports";
  }
}

// Every ${name} of a text panel is a dashboard variable (or one of Grafana's ${__...}), and every
// absolute path it loads ("/validation/latest.png") is a string some service's source serves.
TEST(Dashboards, TextPanelsUseDefinedVariablesAndServedPaths) {
  static const std::regex variable("\\$\\{([A-Za-z0-9_]+)\\}");
  static const std::regex path("\\}(/[a-z0-9_/.-]+)");
  std::string sources;
  for (const auto& entry : fs::recursive_directory_iterator(source_dir() / "services")) {
    if (entry.is_regular_file() && entry.path().extension() == ".cpp")
      sources += read(entry.path());
  }
  std::size_t text_panels = 0;
  for (const auto& file : dashboard_files()) {
    const Json board = Json::parse(read(file));
    std::set<std::string> defined;
    if (board.contains("templating")) {
      for (const auto& v : board["templating"]["list"])
        defined.insert(v.value("name", ""));
    }
    for (const auto& panel : board["panels"]) {
      if (panel.value("type", "") != "text") continue;
      ++text_panels;
      const std::string content = panel["options"].value("content", "");
      SCOPED_TRACE(file.filename().string() + " / " + panel.value("title", ""));
      for (auto it = std::sregex_iterator(content.begin(), content.end(), variable);
           it != std::sregex_iterator(); ++it) {
        const std::string name = (*it)[1].str();
        EXPECT_TRUE(name.starts_with("__") || defined.count(name)) << "undefined ${" << name << "}";
      }
      for (auto it = std::sregex_iterator(content.begin(), content.end(), path);
           it != std::sregex_iterator(); ++it) {
        const std::string served = (*it)[1].str();
        EXPECT_NE(sources.find("\"" + served + "\""), std::string::npos)
            << served << " is not served by any service";
      }
    }
  }
  EXPECT_GE(text_panels, 1u) << "the run overview shows the newest validation grid";
}

TEST(Prometheus, ScrapesEveryServiceTheDashboardsQuery) {
  const YAML::Node config =
      YAML::LoadFile((source_dir() / "deploy/prometheus/prometheus.yml").string());
  std::set<std::string> jobs;
  for (const auto& job : config["scrape_configs"])
    jobs.insert(job["job_name"].as<std::string>());
  std::set<std::string> services;
  static const std::regex service("spotlight_([a-z0-9]+)_");
  for (const auto& file : dashboard_files()) {
    const std::string text = read(file);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), service);
         it != std::sregex_iterator(); ++it)
      services.insert((*it)[1].str());
  }
  for (const auto& s : services)
    EXPECT_TRUE(jobs.count(s)) << "no scrape job for " << s;
}

}  // namespace
