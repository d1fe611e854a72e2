// deploy/k8s without a cluster (kubectl's client-side dry run needs an API server for its
// schemas): every manifest of the kustomization parses, has a known apiVersion/kind, a valid name
// and consistent references (selectors, Services, ConfigMaps, Secrets, volumes, ports), and
// follows the placement rules of docs/quickstart-gpu-kubernetes.md: explorers only on spot pools of
// GKE, EKS and AKS with a grace period longer than explorer.grace_seconds and a preStop hook;
// everything else off spot; Redis with AOF on a persistent volume; Prometheus annotations that
// point at the metrics.bind port of every Spotlight service.
#include <array>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

namespace {

namespace fs = std::filesystem;

fs::path k8s_dir() {
  const char* dir = std::getenv("SPOTLIGHT_SOURCE_DIR");
  return (dir ? fs::path(dir) : fs::path(".")) / "deploy" / "k8s";
}

struct Object {
  std::string file;
  YAML::Node node;
  std::string kind() const { return node["kind"].as<std::string>(""); }
  std::string name() const { return node["metadata"]["name"].as<std::string>(""); }
};

std::vector<Object> load_objects() {
  std::vector<Object> objects;
  const YAML::Node kustomization = YAML::LoadFile((k8s_dir() / "kustomization.yaml").string());
  for (const auto& resource : kustomization["resources"]) {
    const auto file = resource.as<std::string>();
    for (const auto& doc : YAML::LoadAllFromFile((k8s_dir() / file).string())) {
      if (doc.IsNull()) continue;
      objects.push_back({file, doc});
    }
  }
  return objects;
}

const std::map<std::string, std::set<std::string>> kKinds = {
    {"v1", {"Namespace", "Service", "Secret", "ConfigMap"}},
    {"apps/v1", {"Deployment", "StatefulSet"}},
};

bool is_workload(const Object& o) {
  return o.kind() == "Deployment" || o.kind() == "StatefulSet";
}

YAML::Node pod_spec(const Object& o) {
  return o.node["spec"]["template"]["spec"];
}

std::map<std::string, std::string> string_map(const YAML::Node& node) {
  std::map<std::string, std::string> m;
  if (node && node.IsMap()) {
    for (const auto& kv : node)
      m[kv.first.as<std::string>()] = kv.second.as<std::string>();
  }
  return m;
}

bool subset(const std::map<std::string, std::string>& a,
            const std::map<std::string, std::string>& b) {
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end() || it->second != v) return false;
  }
  return true;
}

// The value of `--set KEY=VALUE` in a container's args.
std::optional<std::string> set_value(const YAML::Node& container, const std::string& key) {
  const YAML::Node args = container["args"];
  for (std::size_t i = 0; args && i + 1 < args.size(); ++i) {
    const std::string word = args[i].as<std::string>();
    const std::string next = args[i + 1].as<std::string>();
    if (word == "--set" && next.rfind(key + "=", 0) == 0) return next.substr(key.size() + 1);
  }
  return std::nullopt;
}

const std::array<std::string, 3> kSpotKeys = {"cloud.google.com/gke-spot",
                                              "eks.amazonaws.com/capacityType",
                                              "kubernetes.azure.com/scalesetpriority"};

// Keys of the node-affinity expressions of every required term, per term.
std::vector<std::map<std::string, std::string>> affinity_terms(const YAML::Node& spec) {
  std::vector<std::map<std::string, std::string>> terms;
  const YAML::Node t = spec["affinity"]["nodeAffinity"]
                           ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  for (const auto& term : t) {
    std::map<std::string, std::string> expressions;
    for (const auto& e : term["matchExpressions"])
      expressions[e["key"].as<std::string>()] = e["operator"].as<std::string>();
    terms.push_back(expressions);
  }
  return terms;
}

TEST(K8sManifests, ParseWithKnownKindsAndValidNames) {
  const auto objects = load_objects();
  ASSERT_FALSE(objects.empty());
  static const std::regex dns1123("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& o : objects) {
    SCOPED_TRACE(o.file + " " + o.kind() + "/" + o.name());
    const auto api = o.node["apiVersion"].as<std::string>("");
    ASSERT_TRUE(kKinds.count(api)) << "apiVersion " << api;
    EXPECT_TRUE(kKinds.at(api).count(o.kind())) << "kind " << o.kind();
    EXPECT_TRUE(std::regex_match(o.name(), dns1123)) << "name " << o.name();
    EXPECT_LE(o.name().size(), 63u);
    EXPECT_TRUE(seen.insert({o.kind(), o.name()}).second) << "duplicate";
  }
}

TEST(K8sManifests, WorkloadsAreConsistent) {
  const auto objects = load_objects();
  std::map<std::string, const Object*> by_kind_name;
  for (const auto& o : objects)
    by_kind_name[o.kind() + "/" + o.name()] = &o;
  std::size_t workloads = 0;
  for (const auto& o : objects) {
    if (!is_workload(o)) continue;
    ++workloads;
    SCOPED_TRACE(o.kind() + "/" + o.name());
    const auto selector = string_map(o.node["spec"]["selector"]["matchLabels"]);
    EXPECT_FALSE(selector.empty());
    EXPECT_TRUE(subset(selector, string_map(o.node["spec"]["template"]["metadata"]["labels"])))
        << "selector does not match the pod template's labels";
    if (o.kind() == "StatefulSet") {
      EXPECT_TRUE(
          by_kind_name.count("Service/" + o.node["spec"]["serviceName"].as<std::string>("")))
          << "serviceName without a Service";
    }
    const YAML::Node spec = pod_spec(o);
    std::set<std::string> volumes;
    for (const auto& v : spec["volumes"]) {
      volumes.insert(v["name"].as<std::string>());
      if (v["configMap"]) {
        EXPECT_TRUE(by_kind_name.count("ConfigMap/" + v["configMap"]["name"].as<std::string>()));
      }
    }
    for (const auto& c : o.node["spec"]["volumeClaimTemplates"])
      volumes.insert(c["metadata"]["name"].as<std::string>());
    ASSERT_TRUE(spec["containers"] && spec["containers"].size() > 0);
    for (const auto& c : spec["containers"]) {
      EXPECT_FALSE(c["name"].as<std::string>("").empty());
      EXPECT_FALSE(c["image"].as<std::string>("").empty());
      for (const auto& m : c["volumeMounts"])
        EXPECT_TRUE(volumes.count(m["name"].as<std::string>())) << "mount without a volume";
      for (const auto& e : c["env"]) {
        if (!e["valueFrom"] || !e["valueFrom"]["secretKeyRef"]) continue;
        {
          const YAML::Node ref = e["valueFrom"]["secretKeyRef"];
          const auto* secret = by_kind_name.count("Secret/" + ref["name"].as<std::string>())
                                   ? by_kind_name.at("Secret/" + ref["name"].as<std::string>())
                                   : nullptr;
          ASSERT_NE(secret, nullptr) << "secretKeyRef to a missing Secret";
          EXPECT_TRUE(secret->node["stringData"][ref["key"].as<std::string>()] ||
                      secret->node["data"][ref["key"].as<std::string>()]);
        }
      }
    }
  }
  EXPECT_GE(workloads, 5u) << "redis, reward, planner, trainer, explorer";
  // Every Service selects some workload's pods and targets one of their named ports.
  for (const auto& s : objects) {
    if (s.kind() != "Service") continue;
    SCOPED_TRACE("Service/" + s.name());
    const auto selector = string_map(s.node["spec"]["selector"]);
    const Object* target = nullptr;
    for (const auto& o : objects) {
      if (is_workload(o) &&
          subset(selector, string_map(o.node["spec"]["template"]["metadata"]["labels"])))
        target = &o;
    }
    ASSERT_NE(target, nullptr) << "selects no workload";
    std::set<std::string> ports;
    for (const auto& c : pod_spec(*target)["containers"])
      for (const auto& p : c["ports"])
        ports.insert(p["name"].as<std::string>(""));
    for (const auto& p : s.node["spec"]["ports"])
      EXPECT_TRUE(ports.count(p["targetPort"].as<std::string>(""))) << "targetPort not declared";
  }
}

TEST(K8sManifests, SpotlightServicesAreScrapedOnTheirMetricsPort) {
  std::set<std::string> scraped;
  for (const auto& o : load_objects()) {
    if (!is_workload(o)) continue;
    const YAML::Node c = pod_spec(o)["containers"][0];
    if (c["image"].as<std::string>() != "spotlight") continue;
    SCOPED_TRACE(o.name());
    const auto bind = set_value(c, "metrics.bind");
    ASSERT_TRUE(bind.has_value()) << "no --set metrics.bind";
    const std::string port = bind->substr(bind->rfind(':') + 1);
    auto annotations = string_map(o.node["spec"]["template"]["metadata"]["annotations"]);
    EXPECT_EQ(annotations["prometheus.io/scrape"], "true");
    EXPECT_EQ(annotations["prometheus.io/port"], port);
    EXPECT_EQ(annotations["prometheus.io/path"], "/metrics");
    bool declared = false;
    for (const auto& p : c["ports"])
      declared |= p["containerPort"].as<std::string>() == port;
    EXPECT_TRUE(declared) << "metrics port not a containerPort";
    scraped.insert(o.name());
  }
  EXPECT_EQ(scraped, (std::set<std::string>{"explorer", "planner", "reward", "trainer"}));
}

TEST(K8sManifests, ExplorersOnSpotEverythingElseOff) {
  bool saw_explorer = false;
  for (const auto& o : load_objects()) {
    if (!is_workload(o)) continue;
    SCOPED_TRACE(o.name());
    const YAML::Node spec = pod_spec(o);
    const auto terms = affinity_terms(spec);
    if (o.name() == "explorer") {
      saw_explorer = true;
      std::set<std::string> tolerated, selected;
      for (const auto& t : spec["tolerations"])
        tolerated.insert(t["key"].as<std::string>());
      for (const auto& term : terms)
        for (const auto& [key, op] : term)
          if (op == "In") selected.insert(key);
      for (const auto& key : kSpotKeys) {
        EXPECT_TRUE(tolerated.count(key)) << "no toleration for " << key;
        EXPECT_TRUE(selected.count(key)) << "no node-affinity term for " << key;
      }
      const YAML::Node c = spec["containers"][0];
      const auto grace = set_value(c, "explorer.grace_seconds");
      ASSERT_TRUE(grace.has_value()) << "explorer.grace_seconds not set";
      EXPECT_LT(std::stod(*grace), spec["terminationGracePeriodSeconds"].as<double>(0))
          << "the pod's grace period must outlast the explorer's";
      EXPECT_TRUE(c["lifecycle"]["preStop"]) << "no preStop hook";
    } else {
      ASSERT_EQ(terms.size(), 1u) << "one required term keeping it off spot nodes";
      for (const auto& key : kSpotKeys) {
        ASSERT_TRUE(terms[0].count(key)) << key;
        EXPECT_TRUE(terms[0].at(key) == "NotIn" || terms[0].at(key) == "DoesNotExist") << key;
      }
    }
  }
  EXPECT_TRUE(saw_explorer);
}

TEST(K8sManifests, RedisPersistsWithAofBehindAPassword) {
  for (const auto& o : load_objects()) {
    if (o.kind() != "StatefulSet" || o.name() != "redis") continue;
    ASSERT_TRUE(o.node["spec"]["volumeClaimTemplates"]) << "no persistent volume";
    const YAML::Node c = pod_spec(o)["containers"][0];
    std::string command;
    for (const auto& part : {c["command"], c["args"]})
      for (const auto& w : part)
        command += w.as<std::string>() + " ";
    EXPECT_NE(command.find("--appendonly yes"), std::string::npos) << command;
    EXPECT_NE(command.find("--requirepass"), std::string::npos) << command;
    return;
  }
  FAIL() << "no StatefulSet redis";
}

TEST(K8sManifests, RunConfigIsAnAsyncRecipe) {
  for (const auto& o : load_objects()) {
    if (o.kind() != "ConfigMap" || o.name() != "spotlight-run") continue;
    const YAML::Node recipe = YAML::Load(o.node["data"]["run.yaml"].as<std::string>());
    EXPECT_EQ(recipe["exploration"]["mode"].as<std::string>(""), "async");
    EXPECT_TRUE(recipe["model"]["preset"]);
    return;
  }
  FAIL() << "no ConfigMap spotlight-run";
}

// The autoscaling overlay: the base plus a KEDA ScaledObject that keeps the explorer Deployment at
// the planner's spotlight_planner_desired_explorers (exported by services/planner).
TEST(K8sManifests, AutoscaleOverlayScalesExplorersOnTheDesiredCount) {
  const fs::path dir = k8s_dir().parent_path() / "k8s-autoscale";
  const YAML::Node kustomization = YAML::LoadFile((dir / "kustomization.yaml").string());
  EXPECT_EQ(kustomization["namespace"].as<std::string>(""), "spotlight");
  bool base = false;
  std::vector<YAML::Node> scaled;
  for (const auto& resource : kustomization["resources"]) {
    const auto file = resource.as<std::string>();
    if (file == "../k8s") {
      base = true;
      continue;
    }
    for (const auto& doc : YAML::LoadAllFromFile((dir / file).string())) {
      if (!doc.IsNull()) scaled.push_back(doc);
    }
  }
  EXPECT_TRUE(base) << "the overlay must include the base";
  ASSERT_EQ(scaled.size(), 1u);
  const YAML::Node& so = scaled[0];
  EXPECT_EQ(so["apiVersion"].as<std::string>(""), "keda.sh/v1alpha1");
  EXPECT_EQ(so["kind"].as<std::string>(""), "ScaledObject");
  const YAML::Node target = so["spec"]["scaleTargetRef"];
  EXPECT_EQ(target["kind"].as<std::string>(""), "Deployment");
  bool found = false;
  for (const auto& o : load_objects()) {
    if (o.kind() == "Deployment" && o.name() == target["name"].as<std::string>("")) found = true;
  }
  EXPECT_TRUE(found) << "scaleTargetRef names no Deployment of the base";
  EXPECT_EQ(target["name"].as<std::string>(""), "explorer");
  const int min = so["spec"]["minReplicaCount"].as<int>(-1);
  const int max = so["spec"]["maxReplicaCount"].as<int>(-1);
  EXPECT_GE(min, 1) << "at least one explorer keeps measuring the sample time";
  EXPECT_GE(max, min);
  ASSERT_EQ(so["spec"]["triggers"].size(), 1u);
  const YAML::Node trigger = so["spec"]["triggers"][0];
  EXPECT_EQ(trigger["type"].as<std::string>(""), "prometheus");
  EXPECT_EQ(trigger["metricType"].as<std::string>(""), "AverageValue");
  EXPECT_EQ(trigger["metadata"]["threshold"].as<std::string>(""), "1");
  const std::string query = trigger["metadata"]["query"].as<std::string>("");
  EXPECT_NE(query.find("spotlight_planner_desired_explorers"), std::string::npos) << query;
  EXPECT_FALSE(trigger["metadata"]["serverAddress"].as<std::string>("").empty());
}

TEST(K8sManifests, KustomizeRenders) {
  if (std::system("command -v kubectl >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "kubectl not installed: `kubectl kustomize` not run (the checks above ran)";
  }
  for (const fs::path& dir : {k8s_dir(), k8s_dir().parent_path() / "k8s-autoscale"}) {
    const std::string cmd = "kubectl kustomize '" + dir.string() + "' >/dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
}

}  // namespace
