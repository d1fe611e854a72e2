#pragma once
// When the trainer validates during a run: every `every` iterations, or, with every_seconds > 0,
// at each multiple of every_seconds on the run's time line (the trainer's elapsed seconds,
// validation and audit excluded). The time grid gives modes that iterate at different speeds the
// same resolution on the time line under a wall-time budget; an iteration grid would put a slow
// mode's first point later. The trainer also validates after the last iteration and when its
// budget is spent, whatever the grid.
//
//   ValidationSchedule schedule(every, every_seconds, elapsed_before);
//   if (schedule.due(completed_iterations, elapsed_seconds)) { validate;
//   schedule.validated(elapsed_seconds); }

#include <cmath>
#include <cstdint>

namespace spotlight::trainer {

class ValidationSchedule {
 public:
  // elapsed_before: where a resumed run's time line starts (0 for a new run).
  ValidationSchedule(int every, double every_seconds, double elapsed_before)
      : every_(every), every_seconds_(every_seconds) {
    if (every_seconds_ > 0) next_seconds_ = next_multiple(elapsed_before);
  }

  bool on_time_grid() const { return every_seconds_ > 0; }

  // Whether the point after `completed` iterations, at `elapsed_seconds`, is on the grid.
  bool due(std::int64_t completed, double elapsed_seconds) const {
    if (on_time_grid()) return elapsed_seconds >= next_seconds_;
    return every_ > 0 && completed % every_ == 0;
  }

  // A validation ran at `elapsed_seconds` (on the grid or not): the next grid point follows it.
  void validated(double elapsed_seconds) {
    if (on_time_grid()) next_seconds_ = next_multiple(elapsed_seconds);
  }

  // The time line's next grid point (time grid only).
  double next_seconds() const { return next_seconds_; }

 private:
  double next_multiple(double seconds) const {
    return (std::floor(seconds / every_seconds_) + 1) * every_seconds_;
  }

  int every_;
  double every_seconds_;
  double next_seconds_ = 0;
};

}  // namespace spotlight::trainer
