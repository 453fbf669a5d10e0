// The study's timing, shared by the classifier and detector studies: every variant's engine timed in
// interleaved rounds on one input batch (the starting variant rotating, so drift and order hit all
// alike), the rounds summarized as medians and spreads with the speed-up taken round by round, and a
// per-layer-group profile from separately compiled engines.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "runtime/engine.h"
#include "runtime/machine_load.h"
#include "study/child_timing.h"
#include "study/study_runner.h"

namespace kiln {

// Median of the values, and their min and max. Fails on no value.
Spread spread_of(std::vector<double> values);

// Where `engine`'s backend times device replays and inputs.timing_program is set: timing in `kiln bench`
// processes of that program (child_timing.h), on the same backend; otherwise none.
std::optional<ChildTiming> child_timing_for(const StudyInputs& inputs, Engine& engine);

// What the study's latency figures time: timed_region(engine), and where `child` is set, that each
// timing runs in a `kiln bench` process of its own.
std::string study_timed_region(Engine& engine, const std::optional<ChildTiming>& child);

// Appends one figure per round to variants[i] for engines[i]: the round's median latency, its
// images/s and, where the engine times device replays, the host clock's end-to-end median. With `child`,
// variants[i].plan_file is timed by `kiln bench` processes instead of engines[i] in this one.
void time_in_rounds(const StudySpec& spec, const std::vector<Engine*>& engines, const Tensor& batch,
                    std::vector<VariantResult>& variants, const std::optional<ChildTiming>& child);

// Latency spreads, and the speed-up over spec.baseline per round (so drift cancels).
void summarize_rounds(const StudySpec& spec, std::vector<VariantResult>& variants);

// Whether the study's timings can be trusted (machine_load.h): the load when the study started
// (`environment`), the `samples` taken around its timing, and every variant's round medians.
TimingCheck check_study_timing(const std::vector<LoadSample>& samples, const Environment& environment,
                               const std::vector<VariantResult>& variants);

// Kernel time per layer group of each plan (plans[i] into variants[i]), spec.profile_iterations runs.
void profile_variants(const StudySpec& spec, const std::string& backend, const CompileOptions& compile,
                      const std::vector<std::shared_ptr<const Plan>>& plans, const Tensor& batch,
                      std::vector<VariantResult>& variants);

}  // namespace kiln
