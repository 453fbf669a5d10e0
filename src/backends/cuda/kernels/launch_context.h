// How kiln's kernels launch, as the CUDA program enqueuing them chose it (its early-launch option,
// cuda_options.h). A program enqueues its kernels on one thread, while it compiles (tactics are timed by
// running them), runs its steps eagerly or captures them into a CUDA graph, and holds a LaunchScope for
// as long; launch_early() (kernel_launch.cuh) reads the context of the thread launching. A CUDA graph's
// replays keep the launch attributes it was captured with. Kernels launched with no program around
// them (kernel tests) get the defaults.
#pragma once

namespace kiln::cuda {

struct LaunchContext {
  bool early_launch = true;  // programmatic dependent launch (kernel_launch.cuh)
};

// This thread's context.
inline LaunchContext& launch_context() {
  thread_local LaunchContext context;
  return context;
}

// Sets this thread's context for its lifetime, then restores the one before.
class LaunchScope {
 public:
  explicit LaunchScope(const LaunchContext& context) : previous_(launch_context()) {
    launch_context() = context;
  }
  ~LaunchScope() { launch_context() = previous_; }
  LaunchScope(const LaunchScope&) = delete;
  LaunchScope& operator=(const LaunchScope&) = delete;

 private:
  LaunchContext previous_;
};

}  // namespace kiln::cuda
