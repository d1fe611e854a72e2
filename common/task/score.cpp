#include "common/task/score.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>

#include "common/task/detect.hpp"
#include "common/task/digits.hpp"
#include "common/task/errors.hpp"

namespace spotlight::task {
namespace {

struct Clause {
  double credit = 0.0;  // in [0,1], 1 iff ok
  bool ok = false;
  std::string failure;  // set iff !ok
};

struct Matches {
  std::vector<const DetectedObject*> exact;  // right colour and shape
  int colour_only = 0;                       // right colour, other or no shape
};

Matches find(const std::vector<DetectedObject>& objects, const ObjectSpec& spec) {
  Matches m;
  for (const DetectedObject& o : objects) {
    if (o.colour != spec.colour) continue;
    if (o.shape == spec.shape) {
      m.exact.push_back(&o);
    } else {
      ++m.colour_only;
    }
  }
  return m;
}

std::string describe(const ObjectSpec& spec) {
  std::string out = std::string(name(spec.colour)) + " " + std::string(name(spec.shape));
  if (spec.count != 1) out += "s";
  return out;
}

std::string found_text(const Matches& m) {
  std::string out = "found " + std::to_string(m.exact.size());
  if (m.colour_only > 0) {
    out += " (+" + std::to_string(m.colour_only) + " of that colour, other shape)";
  }
  return out;
}

// At least spec.count objects of the right colour and shape.
Clause at_least(const Matches& m, const ObjectSpec& spec) {
  const double n = spec.count;
  const int exact = static_cast<int>(m.exact.size());
  Clause c;
  c.ok = exact >= spec.count;
  c.credit = c.ok ? 1.0
                  : std::max(std::min<double>(exact, n) / n,
                             0.5 * std::min<double>(exact + m.colour_only, n) / n);
  if (!c.ok) {
    c.failure =
        "expected >= " + std::to_string(spec.count) + " " + describe(spec) + ", " + found_text(m);
  }
  return c;
}

// Exactly spec.count objects of the right colour and shape.
Clause exactly(const Matches& m, const ObjectSpec& spec) {
  const double n = spec.count;
  const int exact = static_cast<int>(m.exact.size());
  auto closeness = [&](int x) { return std::max(0.0, 1.0 - std::abs(x - n) / n); };
  Clause c;
  c.ok = exact == spec.count;
  c.credit = c.ok ? 1.0 : std::max(closeness(exact), 0.5 * closeness(exact + m.colour_only));
  if (!c.ok) {
    c.failure = "expected exactly " + std::to_string(spec.count) + " " + describe(spec) + ", " +
                found_text(m);
  }
  return c;
}

// Every detected A in `relation` to every detected B (GenEval); credit = share of pairs that are.
Clause related(const Matches& a, const Matches& b, const Prompt& prompt) {
  Clause c;
  const std::string what = describe(prompt.objects[0]) + " " + std::string(name(prompt.relation)) +
                           " " + describe(prompt.objects[1]);
  if (a.exact.empty() || b.exact.empty()) {
    c.failure = "cannot check " + what + ": object missing";
    return c;
  }
  int holds = 0;
  for (const DetectedObject* oa : a.exact) {
    for (const DetectedObject* ob : b.exact) {
      holds += relation_holds(*oa, *ob, prompt.relation);
    }
  }
  const int pairs = static_cast<int>(a.exact.size() * b.exact.size());
  c.ok = holds == pairs;
  c.credit = static_cast<double>(holds) / pairs;
  if (!c.ok) {
    c.failure =
        "not " + what + " (" + std::to_string(holds) + "/" + std::to_string(pairs) + " pairs hold)";
  }
  return c;
}

Score combine(const std::vector<Clause>& clauses) {
  Score score;
  score.correct = true;
  double total = 0.0;
  for (const Clause& c : clauses) {
    total += c.credit;
    if (!c.ok) {
      score.correct = false;
      if (!score.reason.empty()) score.reason += "; ";
      score.reason += c.failure;
    }
  }
  if (score.correct) {
    score.reward = 1.0;
    score.reason = "ok";
  } else {
    // Every failed clause has credit < 1, so the mean is < 1; the clamp only guards rounding.
    score.reward = std::min(total / clauses.size(), std::nextafter(1.0, 0.0));
  }
  return score;
}

Score score_text(const Prompt& prompt, const Image& image, const TaskOptions& options) {
  const std::string read = read_digits(image, options);
  Score score;
  score.correct = read == prompt.digits;
  const double n = static_cast<double>(prompt.digits.size());
  score.reward = score.correct ? 1.0 : std::max(0.0, 1.0 - edit_distance(read, prompt.digits) / n);
  score.reason = score.correct ? "ok" : "read \"" + read + "\", expected \"" + prompt.digits + "\"";
  return score;
}

Score partial_score(const Prompt& prompt, const Image& image, const TaskOptions& options) {
  validate(prompt);
  if (prompt.category == Category::kFreeText) {
    throw TaskError("the embedded scorer cannot grade a prompt of a prompt file ('" +
                    prompt.free_text + "'): score it with a reward service (reward.endpoint)");
  }
  if (prompt.category == Category::kText) return score_text(prompt, image, options);
  const std::vector<DetectedObject> objects = detect_objects(image, options);
  std::vector<Clause> clauses;
  switch (prompt.category) {
    case Category::kSingleObject:
    case Category::kTwoObject:
      for (const ObjectSpec& spec : prompt.objects) {
        clauses.push_back(at_least(find(objects, spec), spec));
      }
      break;
    case Category::kCounting:
      clauses.push_back(exactly(find(objects, prompt.objects[0]), prompt.objects[0]));
      break;
    case Category::kPosition: {
      const Matches a = find(objects, prompt.objects[0]);
      const Matches b = find(objects, prompt.objects[1]);
      clauses.push_back(at_least(a, prompt.objects[0]));
      clauses.push_back(at_least(b, prompt.objects[1]));
      clauses.push_back(related(a, b, prompt));
      break;
    }
    case Category::kText:
    case Category::kFreeText:
      break;
  }
  return combine(clauses);
}

// Mean and standard error (sample standard deviation / sqrt(n)) of `xs`.
std::pair<double, double> mean_and_error(const std::vector<double>& xs) {
  const double n = static_cast<double>(xs.size());
  double sum = 0.0;
  for (const double x : xs)
    sum += x;
  const double mean = sum / n;
  if (xs.size() < 2) return {mean, 0.0};
  double squares = 0.0;
  for (const double x : xs)
    squares += (x - mean) * (x - mean);
  return {mean, std::sqrt(squares / (n - 1.0) / n)};
}

}  // namespace

Score score(const Prompt& prompt, const Image& image, const TaskOptions& options) {
  Score s = partial_score(prompt, image, options);
  s.partial = s.reward;
  if (options.reward_kind == RewardKind::kStrict) s.reward = s.correct ? 1.0 : 0.0;
  return s;
}

Evaluation evaluate(const std::vector<Prompt>& prompts, const std::vector<Image>& images,
                    const TaskOptions& options) {
  if (prompts.size() != images.size()) {
    throw TaskError("evaluate: " + std::to_string(prompts.size()) + " prompts but " +
                    std::to_string(images.size()) + " images");
  }
  Evaluation e;
  if (prompts.empty()) return e;
  std::map<Category, double> correct;
  std::vector<double> rewards, partial, strict;
  rewards.reserve(prompts.size());
  partial.reserve(prompts.size());
  strict.reserve(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    const Score s = score(prompts[i], images[i], options);
    const Category c = prompts[i].category;
    correct[c] += s.correct ? 1.0 : 0.0;
    e.per_category_reward[c] += s.reward;
    ++e.per_category_count[c];
    rewards.push_back(s.reward);
    partial.push_back(s.partial);
    strict.push_back(s.correct ? 1.0 : 0.0);
  }
  double accuracy_sum = 0.0, accuracy_variance = 0.0;
  int geneval_categories = 0;
  for (const auto& [category, count] : e.per_category_count) {
    e.per_category[category] = correct[category] / count;
    e.per_category_reward[category] /= count;
    if (category == Category::kText) {
      e.ocr_score = e.per_category[category];  // the OCR-like task is scored on its own
      continue;
    }
    accuracy_sum += e.per_category[category];
    const double p = e.per_category[category];
    accuracy_variance += p * (1.0 - p) / count;
    ++geneval_categories;
  }
  e.geneval_score = geneval_categories ? accuracy_sum / geneval_categories : 0.0;
  e.geneval_std_error =
      geneval_categories ? std::sqrt(accuracy_variance) / geneval_categories : 0.0;
  std::tie(e.mean_reward, e.mean_reward_std_error) = mean_and_error(rewards);
  std::tie(e.mean_partial_reward, e.mean_partial_reward_std_error) = mean_and_error(partial);
  std::tie(e.mean_strict_reward, e.mean_strict_reward_std_error) = mean_and_error(strict);
  return e;
}

int edit_distance(std::string_view a, std::string_view b) {
  std::vector<int> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) {
    row[j] = static_cast<int>(j);
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace spotlight::task
