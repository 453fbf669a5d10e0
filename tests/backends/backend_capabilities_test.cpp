// What the code above the backends asks a backend instead of testing its name: whether it has a device
// (device buffers, preprocessing there, activations outside the host's memory) and options of its own.
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/backend.h"
#include "backends/device.h"
#include "backends/device_buffer.h"
#include "cuda_test_util.h"

namespace kiln {
namespace {

TEST(BackendCapabilities, HostBackendsHaveNoDeviceAndNoOptions) {
  for (const std::string_view name : backend_names()) {
    const auto backend = make_backend(name);
    if (name == "cuda") continue;  // the device backend, below
    EXPECT_EQ(backend->device(), nullptr) << name;
    EXPECT_FALSE(backend->takes_options()) << name;
  }
}

TEST(BackendCapabilities, TheCudaBackendHasADeviceAndOptions) {
  if (!testing::cuda_built()) GTEST_SKIP() << "the CUDA backend is not built (KILN_CUDA is off)";
  const auto cuda = make_backend("cuda");
  ASSERT_NE(cuda->device(), nullptr);
  EXPECT_EQ(cuda->device()->kind(), "CUDA");
  EXPECT_EQ(cuda->device(), make_backend("cuda")->device()) << "one device for the program";
  EXPECT_TRUE(cuda->takes_options());
}

TEST(BackendCapabilities, DeviceMemoryIsTheDevicesAndHostMemoryIsNot) {
  KILN_SKIP_WITHOUT_GPU();
  const Device& device = *make_backend("cuda")->device();
  ASSERT_GT(device.count(), 0);
  ASSERT_TRUE(device.select(0));
  const DeviceBuffer buffer(device, 64);
  const float host[4] = {1, 2, 3, 4};
  EXPECT_TRUE(device.holds(buffer.data()));
  EXPECT_FALSE(device.holds(host));
  const DeviceStream stream(device);
  device.clear(buffer.data(), buffer.bytes(), stream.get(), "clearing");
  float back[4] = {9, 9, 9, 9};
  device.copy_to_host(back, buffer.data(), sizeof(back), stream.get(), "copying");
  device.synchronize(stream.get(), "waiting");
  EXPECT_TRUE(std::all_of(back, back + 4, [](float v) { return v == 0.0f; }));
  EXPECT_TRUE(device.wait_for(stream.get(), nullptr));
}

}  // namespace
}  // namespace kiln
