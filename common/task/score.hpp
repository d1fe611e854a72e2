#pragma once
// Rule-based scoring of one image against its prompt, GenEval-style (see task.hpp for the rules).

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/task/image.hpp"
#include "common/task/options.hpp"
#include "common/task/prompt.hpp"

namespace spotlight::task {

struct Score {
  // What RL maximises, by options.reward_kind: the partial credit, or 1/0 by `correct`. Exactly
  // 1.0 iff correct either way.
  double reward = 0.0;
  double partial = 0.0;  // soft partial credit in [0,1] (whichever kind is paid)
  bool correct = false;  // strict GenEval-style verdict
  std::string reason;  // "ok", or the failed clauses, e.g. "expected exactly 3 cyan discs, found 2"
};

// Scores `image` for `prompt`. Fast (microseconds at 32x32), pure, thread-safe. Throws TaskError
// if the prompt is invalid or the image does not match options.image_size.
Score score(const Prompt& prompt, const Image& image, const TaskOptions& options);

struct Evaluation {
  // Mean strict accuracy over the GenEval-like categories present (single_object, two_object,
  // counting, position), as GenEval's overall score; the OCR-like text category is not part of
  // it and has its own score.
  double geneval_score = 0.0;
  double ocr_score = 0.0;    // strict accuracy of the text prompts present (exact digit string)
  double mean_reward = 0.0;  // mean reward over all images (of options.reward_kind)
  // Both kinds, whichever is paid: mean partial credit, and the share of images correct (the
  // strict reward's mean, over every category present, text included).
  double mean_partial_reward = 0.0;
  double mean_strict_reward = 0.0;
  // Standard errors, treating the images as independent draws: of mean_reward (sample standard
  // deviation / sqrt(n)) and of geneval_score (sqrt(sum over categories of p(1-p)/n) / categories).
  double mean_reward_std_error = 0.0;
  double mean_partial_reward_std_error = 0.0;
  double mean_strict_reward_std_error = 0.0;
  double geneval_std_error = 0.0;
  std::map<Category, double> per_category;         // strict accuracy per category present
  std::map<Category, double> per_category_reward;  // mean reward per category present
  std::map<Category, int> per_category_count;      // number of prompts per category present
};

// Scores images[i] against prompts[i]. Throws TaskError if the sizes differ. Empty input gives
// all zeros.
Evaluation evaluate(const std::vector<Prompt>& prompts, const std::vector<Image>& images,
                    const TaskOptions& options);

// Levenshtein distance (insertions, deletions, substitutions, each cost 1).
int edit_distance(std::string_view a, std::string_view b);

}  // namespace spotlight::task
