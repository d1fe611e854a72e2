#include "common/task/generator.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <unordered_set>
#include <utility>

#include "common/task/detail/random.hpp"
#include "common/task/errors.hpp"

namespace spotlight::task {
namespace {

constexpr uint64_t kPromptStream = 0x70726f6d7074ULL;  // "prompt"

size_t index_of(Category category) {
  return static_cast<size_t>(category);
}

std::vector<ObjectSpec> all_objects(int count) {
  std::vector<ObjectSpec> out;
  for (Colour colour : kColours) {
    for (Shape shape : kShapes) {
      out.push_back(ObjectSpec{count, colour, shape});
    }
  }
  return out;
}

Relation mirrored(Relation relation) {
  switch (relation) {
    case Relation::kLeftOf:
      return Relation::kRightOf;
    case Relation::kRightOf:
      return Relation::kLeftOf;
    case Relation::kAbove:
      return Relation::kBelow;
    case Relation::kBelow:
      return Relation::kAbove;
    case Relation::kNone:
      break;
  }
  return Relation::kNone;
}

// The text of the prompt's meaning-preserving canonical form (see generator.hpp).
std::string canonical_key(const Prompt& prompt) {
  Prompt key = prompt;
  auto order = [](const ObjectSpec& o) {
    return std::pair(static_cast<int>(o.colour), static_cast<int>(o.shape));
  };
  if (key.category == Category::kTwoObject && order(key.objects[1]) < order(key.objects[0])) {
    std::swap(key.objects[0], key.objects[1]);
  }
  if (key.category == Category::kPosition && key.objects[0].count == 1 &&
      (key.relation == Relation::kRightOf || key.relation == Relation::kBelow)) {
    std::swap(key.objects[0], key.objects[1]);
    key.relation = mirrored(key.relation);
  }
  return key.text();
}

std::vector<Prompt> enumerate(Category category, const TaskOptions& options) {
  std::vector<Prompt> out;
  switch (category) {
    case Category::kSingleObject:
      for (const ObjectSpec& o : all_objects(1)) {
        out.push_back(Prompt{category, {o}, {}, {}});
      }
      break;
    case Category::kTwoObject:
      for (const ObjectSpec& a : all_objects(1)) {
        for (const ObjectSpec& b : all_objects(1)) {
          if (a != b) out.push_back(Prompt{category, {a, b}, {}, {}});
        }
      }
      break;
    case Category::kCounting:
      for (int n = 2; n <= options.max_count; ++n) {
        for (const ObjectSpec& o : all_objects(n)) {
          out.push_back(Prompt{category, {o}, {}, {}});
        }
      }
      break;
    case Category::kPosition:
      for (int n = 1; n <= 2; ++n) {
        for (const ObjectSpec& a : all_objects(n)) {
          for (const ObjectSpec& b : all_objects(1)) {
            if (a.colour == b.colour && a.shape == b.shape) continue;
            for (Relation relation : kRelations) {
              out.push_back(Prompt{category, {a, b}, relation, {}});
            }
          }
        }
      }
      break;
    case Category::kText:
      for (int length = options.min_digits; length <= options.max_digits; ++length) {
        int hi = 1;
        for (int i = 0; i < length; ++i) {
          hi *= 10;
        }
        const int lo = length == 1 ? 0 : hi / 10;  // no leading zero
        for (int value = lo; value < hi; ++value) {
          out.push_back(Prompt{category, {}, Relation::kNone, std::to_string(value)});
        }
      }
      break;
    case Category::kFreeText:  // not part of the embedded task
      break;
  }
  return out;
}

}  // namespace

struct PromptGenerator::Tables {
  TaskOptions options;
  std::array<std::vector<Prompt>, kCategories.size()> training;
  std::array<std::vector<Prompt>, kCategories.size()> held_out;
  std::array<std::unordered_set<std::string>, kCategories.size()> held_out_keys;
  std::array<double, kCategories.size()> cumulative_weight{};
};

PromptGenerator::PromptGenerator(const TaskOptions& options) {
  options.validate();
  auto tables = std::make_shared<Tables>();
  tables->options = options;
  const std::array<double, kCategories.size()> weights = {
      options.weights.single_object, options.weights.two_object, options.weights.counting,
      options.weights.position, options.weights.text};
  double total = 0.0;
  for (Category category : kCategories) {
    const size_t c = index_of(category);
    total += weights[c];
    tables->cumulative_weight[c] = total;

    std::vector<Prompt> prompts = enumerate(category, options);
    std::vector<std::string> keys;
    keys.reserve(prompts.size());
    for (const Prompt& p : prompts) {
      keys.push_back(canonical_key(p));
    }
    // Distinct keys ordered by (hash, key); the first ceil(fraction * n) are held out.
    std::vector<std::pair<uint64_t, std::string>> ordered;
    {
      std::unordered_set<std::string> seen;
      for (const std::string& k : keys) {
        if (seen.insert(k).second) ordered.emplace_back(detail::hash64(k), k);
      }
    }
    std::sort(ordered.begin(), ordered.end());
    const size_t n_held = static_cast<size_t>(
        std::ceil(options.held_out_fraction * static_cast<double>(ordered.size())));
    for (size_t i = 0; i < n_held && i < ordered.size(); ++i) {
      tables->held_out_keys[c].insert(ordered[i].second);
    }
    for (size_t i = 0; i < prompts.size(); ++i) {
      (tables->held_out_keys[c].count(keys[i]) ? tables->held_out[c] : tables->training[c])
          .push_back(std::move(prompts[i]));
    }
    // Held-out prompts by hash of their own text, so both orders of a pair do not sit together.
    std::vector<std::pair<uint64_t, Prompt>> by_hash;
    for (Prompt& p : tables->held_out[c]) {
      by_hash.emplace_back(detail::hash64(p.text()), p);
    }
    std::stable_sort(by_hash.begin(), by_hash.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < by_hash.size(); ++i) {
      tables->held_out[c][i] = std::move(by_hash[i].second);
    }
  }
  tables_ = std::move(tables);
}

Prompt PromptGenerator::sample(uint64_t seed) const {
  detail::Rng rng(seed, kPromptStream);
  const auto& cumulative = tables_->cumulative_weight;
  const double u = rng.uniform() * cumulative.back();
  size_t c = 0;
  // First category whose cumulative weight exceeds u (zero-weight categories are skipped since
  // their cumulative weight equals the previous one).
  while (c + 1 < cumulative.size() && !(u < cumulative[c])) {
    ++c;
  }
  const std::vector<Prompt>& pool = tables_->training[c];
  return pool[rng.uniform_int(static_cast<int>(pool.size()))];
}

bool PromptGenerator::is_held_out(const Prompt& prompt) const {
  validate(prompt);
  return tables_->held_out_keys[index_of(prompt.category)].count(canonical_key(prompt)) > 0;
}

const std::vector<Prompt>& PromptGenerator::training_prompts(Category category) const {
  return tables_->training.at(index_of(category));
}

const std::vector<Prompt>& PromptGenerator::held_out_prompts(Category category) const {
  return tables_->held_out.at(index_of(category));
}

std::vector<Prompt> PromptGenerator::validation(int n) const {
  return validation_prompts(options(), n);
}

const TaskOptions& PromptGenerator::options() const {
  return tables_->options;
}

std::vector<Prompt> validation_prompts(const TaskOptions& options, int n) {
  if (n < 0) throw TaskError("validation_prompts: n must be >= 0, got " + std::to_string(n));
  const PromptGenerator generator(options);
  const std::array<double, kCategories.size()> weights = {
      options.weights.single_object, options.weights.two_object, options.weights.counting,
      options.weights.position, options.weights.text};
  std::vector<Category> active;
  for (Category category : kCategories) {
    if (weights[index_of(category)] > 0.0) active.push_back(category);
  }
  std::vector<Prompt> out;
  out.reserve(n);
  for (int i = 0; i < n; ++i) {
    const std::vector<Prompt>& pool = generator.held_out_prompts(active[i % active.size()]);
    out.push_back(pool[(i / active.size()) % pool.size()]);
  }
  return out;
}

}  // namespace spotlight::task
