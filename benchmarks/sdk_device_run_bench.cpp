// What the C API's device run costs over the network's CUDA-graph replay. Times back-to-back
// context_run_device calls on one stream (each a graph launch reading and writing the caller's buffers),
// with CUDA events around every sample of N calls (after a warm-up), and the host clock around the enqueue
// loop of the same sample (a loop slower on the host than on the device leaves the GPU idle between
// calls, and the device figure then measures the host). Twice: on the same buffers every call, and
// alternating between two input/output pairs (each call then points the graph at other buffers). Prints
// JSON; given `kiln bench --json`'s median (device events around 20 graph replays per sample, the same
// way), also the difference.
//
//   sdk_device_run_bench PLAN [--batch B] [--calls N] [--warmup S] [--duration S] [--min-samples K]
//                             [--device D] [--replay-ms MS]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string plan;
  std::int64_t batch = 0;  // 0: the plan's
  int calls = 20;          // per sample, as kiln bench's replays per sample
  double warmup_seconds = 1.0;
  double duration_seconds = 3.0;
  int min_samples = 20;
  int device = 0;
  double replay_ms = -1.0;  // kiln bench's median; < 0: not given
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "sdk_device_run_bench: %s\nusage: sdk_device_run_bench PLAN [--batch B] [--calls N] "
               "[--warmup S] [--duration S] [--min-samples K] [--device D] [--replay-ms MS]\n",
               why.c_str());
  std::exit(2);
}

double number(const char* text, const std::string& flag) {
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (end == text || *end != '\0') usage(flag + " takes a number, got '" + text + "'");
  return value;
}

Options parse(int argc, char** argv) {
  Options o;
  const std::map<std::string, std::function<void(double)>> flags = {
      {"--batch", [&](double v) { o.batch = static_cast<std::int64_t>(v); }},
      {"--calls", [&](double v) { o.calls = static_cast<int>(v); }},
      {"--warmup", [&](double v) { o.warmup_seconds = v; }},
      {"--duration", [&](double v) { o.duration_seconds = v; }},
      {"--min-samples", [&](double v) { o.min_samples = static_cast<int>(v); }},
      {"--device", [&](double v) { o.device = static_cast<int>(v); }},
      {"--replay-ms", [&](double v) { o.replay_ms = v; }}};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) {
      if (!o.plan.empty()) usage("one plan only");
      o.plan = arg;
      continue;
    }
    const auto flag = flags.find(arg);
    if (flag == flags.end()) usage("unknown option " + arg);
    if (i + 1 >= argc) usage(arg + " needs a value");
    flag->second(number(argv[++i], arg));
  }
  if (o.plan.empty()) usage("no plan given");
  if (o.calls < 1 || o.min_samples < 1 || o.duration_seconds <= 0 || o.warmup_seconds < 0 || o.batch < 0)
    usage("--calls and --min-samples must be >= 1, --duration > 0, --warmup and --batch >= 0");
  return o;
}

void cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

const kiln_api& api() {
  static const kiln_api* table = [] {
    const kiln_api* found = nullptr;
    if (kiln_get_api(KILN_ABI_MAJOR, KILN_ABI_MINOR, &found) != KILN_OK)
      throw std::runtime_error("libkiln does not offer this header's ABI");
    return found;
  }();
  return *table;
}

void kiln_check(kiln_status status, kiln_error* error, const char* what) {
  if (status == KILN_OK) return;
  std::string message =
      std::string(what) + ": " + (error ? api().error_message(error) : kiln_status_name(status));
  api().error_free(error);
  throw std::runtime_error(message);
}

// The engine's one input and one output, in device memory the benchmark owns.
struct DeviceTensor {
  kiln_tensor_info info{};
  void* data = nullptr;
  std::size_t bytes = 0;
  kiln_tensor view() const { return {data, bytes, KILN_DTYPE_F32, info.rank, info.shape}; }
};

DeviceTensor allocate(const kiln_tensor_info& info) {
  DeviceTensor t{info, nullptr, sizeof(float)};
  for (std::size_t d = 0; d < info.rank; ++d) t.bytes *= static_cast<std::size_t>(info.shape[d]);
  cuda(cudaMalloc(&t.data, t.bytes), "cudaMalloc");
  return t;
}

// Seeded normal values, as kiln bench times on (zeros could take faster paths).
void fill_input(const DeviceTensor& input) {
  std::vector<float> values(input.bytes / sizeof(float));
  std::mt19937 generator(42);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : values) v = normal(generator);
  cuda(cudaMemcpy(input.data, values.data(), input.bytes, cudaMemcpyHostToDevice), "uploading the input");
}

struct Sample {
  double device_ms_per_call;
  double host_us_per_call;
};

// CUDA events around `calls` back-to-back enqueues on `stream`, the host clock around the enqueue loop.
Sample time_sample(cudaStream_t stream, int calls, const std::function<void()>& enqueue, cudaEvent_t start,
                   cudaEvent_t stop) {
  cuda(cudaEventRecord(start, stream), "recording an event");
  const auto begin = Clock::now();
  for (int i = 0; i < calls; ++i) enqueue();
  const double host_us = std::chrono::duration<double, std::micro>(Clock::now() - begin).count();
  cuda(cudaEventRecord(stop, stream), "recording an event");
  cuda(cudaEventSynchronize(stop), "waiting for the sample");
  float ms = 0;
  cuda(cudaEventElapsedTime(&ms, start, stop), "reading the events");
  return {static_cast<double>(ms) / calls, host_us / calls};
}

double seconds_since(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// Samples after a warm-up, for `duration` seconds and at least o.min_samples of them.
std::vector<Sample> time_samples(cudaStream_t stream, const std::function<void()>& enqueue, const Options& o,
                                 double warmup, double duration) {
  cudaEvent_t start = nullptr, stop = nullptr;
  cuda(cudaEventCreate(&start), "creating an event");
  cuda(cudaEventCreate(&stop), "creating an event");
  const auto warmup_start = Clock::now();
  do {
    time_sample(stream, o.calls, enqueue, start, stop);
  } while (seconds_since(warmup_start) < warmup);
  std::vector<Sample> samples;
  const auto begin = Clock::now();
  while (seconds_since(begin) < duration || static_cast<int>(samples.size()) < o.min_samples)
    samples.push_back(time_sample(stream, o.calls, enqueue, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return samples;
}

struct Stats {
  double median, min, max;
};

Stats stats(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  const double middle = n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
  return {middle, values.front(), values.back()};
}

Stats device_ms(const std::vector<Sample>& samples) {
  std::vector<double> values;
  for (const Sample& s : samples) values.push_back(s.device_ms_per_call);
  return stats(values);
}

Stats host_us(const std::vector<Sample>& samples) {
  std::vector<double> values;
  for (const Sample& s : samples) values.push_back(s.host_us_per_call);
  return stats(values);
}

void print_stats(const char* key, const Stats& s, int digits) {
  std::printf("  \"%s\": {\"median\": %.*f, \"min\": %.*f, \"max\": %.*f},\n", key, digits, s.median, digits,
              s.min, digits, s.max);
}

// `runs`: device runs on one pair of buffers; `alternating`: on two pairs in turn.
void print_json(const Options& o, std::int64_t batch, const std::vector<Sample>& runs,
                const std::vector<Sample>& alternating) {
  const Stats device = device_ms(runs), host = host_us(runs), other = device_ms(alternating);
  std::printf(
      "{\n  \"plan\": \"%s\",\n  \"batch\": %lld,\n  \"calls_per_sample\": %d,\n  \"samples\": %zu,\n",
      o.plan.c_str(), static_cast<long long>(batch), o.calls, runs.size());
  std::printf(
      "  \"timed_region\": \"device events around %d back-to-back context_run_device calls on one "
      "stream (one graph launch on the caller's buffers each)\",\n",
      o.calls);
  print_stats("device_ms_per_call", device, 6);
  print_stats("host_us_per_call", host, 3);
  print_stats("alternating_buffers_device_ms_per_call", other, 6);
  // Host-bound: the enqueue loop outlasts the device work, so the GPU idles between calls.
  std::printf("  \"host_bound\": %s,\n", host.median / 1000.0 >= device.median ? "true" : "false");
  if (o.replay_ms >= 0) {
    const double added_us = (device.median - o.replay_ms) * 1000.0;
    const double alternating_added_us = (other.median - o.replay_ms) * 1000.0;
    std::printf("  \"replay_ms\": %.6f,\n  \"added_us\": %.3f,\n  \"alternating_added_us\": %.3f,\n",
                o.replay_ms, added_us, alternating_added_us);
    std::printf("  \"target_added_us\": 5,\n  \"within_target\": %s\n}\n",
                std::max(added_us, alternating_added_us) < 5.0 ? "true" : "false");
  } else {
    std::printf("  \"replay_ms\": null,\n  \"added_us\": null,\n  \"alternating_added_us\": null,\n");
    std::printf("  \"target_added_us\": 5,\n  \"within_target\": null\n}\n");
  }
}

struct Kiln {
  kiln_plan* plan = nullptr;
  kiln_engine* engine = nullptr;
  kiln_context* context = nullptr;
  ~Kiln() {
    api().context_free(context);
    api().engine_free(engine);
    api().plan_free(plan);
  }
};

void open_engine(const Options& o, Kiln& k) {
  kiln_error* error = nullptr;
  kiln_check(api().plan_load_file(o.plan.c_str(), &k.plan, &error), error, "loading the plan");
  const kiln_engine_options options{sizeof(kiln_engine_options), "cuda", o.device, o.batch, 0, 1, nullptr};
  kiln_check(api().engine_create(k.plan, &options, &k.engine, &error), error, "creating the cuda engine");
  kiln_check(api().context_create(k.engine, &k.context, &error), error, "creating a context");
  if (api().engine_input_count(k.engine) != 1 || api().engine_output_count(k.engine) != 1)
    throw std::runtime_error("this benchmark takes an engine of one input and one output");
}

// The device runs on one stream: on the same buffers, then alternating between two pairs.
void bench(const Options& o) {
  cuda(cudaSetDevice(o.device), "selecting the CUDA device");
  Kiln k;
  open_engine(o, k);
  kiln_error* error = nullptr;
  kiln_tensor_info in_info{}, out_info{};
  kiln_check(api().engine_input_info(k.engine, 0, &in_info, &error), error, "reading the input");
  kiln_check(api().engine_output_info(k.engine, 0, &out_info, &error), error, "reading the output");
  const DeviceTensor input = allocate(in_info), output = allocate(out_info);
  const DeviceTensor input2 = allocate(in_info), output2 = allocate(out_info);
  fill_input(input);
  fill_input(input2);
  cudaStream_t stream = nullptr;
  cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "creating a stream");
  const kiln_tensor in[] = {input.view(), input2.view()}, out[] = {output.view(), output2.view()};
  int turn = 0;
  const auto run_on = [&](int pair) {
    kiln_check(api().context_run_device(k.context, &in[pair], 1, &out[pair], 1, stream, &error), error,
               "context_run_device");
  };
  const auto runs = time_samples(
      stream, [&] { run_on(0); }, o, o.warmup_seconds, o.duration_seconds);
  const auto alternating = time_samples(
      stream, [&] { run_on(turn ^= 1); }, o, o.warmup_seconds, o.duration_seconds);
  print_json(o, api().engine_batch(k.engine), runs, alternating);
  cudaStreamDestroy(stream);
  for (const DeviceTensor* t : {&input, &output, &input2, &output2}) cudaFree(t->data);
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "sdk_device_run_bench: no CUDA device\n");
    return 3;
  }
  try {
    bench(options);
  } catch (const std::exception& failure) {
    std::fprintf(stderr, "sdk_device_run_bench: %s\n", failure.what());
    return 1;
  }
  return 0;
}
