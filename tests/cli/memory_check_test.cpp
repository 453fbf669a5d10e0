// The activation estimate and the refusal it drives, on a graph whose peak is known by hand.
#include "cli/memory_check.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace kiln::cli {
namespace {

// x [N, 4, 8, 8] -> relu a -> relu b -> add(a, b): at the add, x is no longer read, a, b and the sum live.
Graph chain() {
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, 4, 8, 8});
  const ValueId a = graph.add_node(OpKind::kActivation, "a", {x}, ActivationAttrs{});
  const ValueId b = graph.add_node(OpKind::kActivation, "b", {a}, ActivationAttrs{});
  const ValueId sum = graph.add_node(OpKind::kAdd, "sum", {a, b}, AddAttrs{});
  graph.mark_output(sum);
  return graph;
}

TEST(MemoryCheck, PeakCountsTheValuesAliveTogether) {
  const std::uint64_t image = 4 * 8 * 8 * sizeof(float);
  EXPECT_EQ(peak_activation_bytes(chain(), 1), 3 * image);
  EXPECT_EQ(peak_activation_bytes(chain(), 10), 30 * image);
}

TEST(MemoryCheck, RefusesABatchBeyondTheBudgetNamingBoth) {
  const Graph graph = chain();
  const std::uint64_t needed = peak_activation_bytes(graph, 1000);
  EXPECT_NO_THROW(refuse_batch_beyond_memory(graph, 1000, {needed, "available"}));
  try {
    refuse_batch_beyond_memory(graph, 1000, {needed - 1, "available"});
    FAIL() << "the batch does not fit";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_EQ(
        message.rfind("batch 1000 needs ~0.0 GiB of activations; this machine has 0.0 GiB available", 0), 0u)
        << message;
    EXPECT_NE(message.find("--batch"), std::string::npos) << message;
  }
}

TEST(MemoryCheck, TheHostBudgetIsSomethingReal) {
  const MemoryBudget budget = host_memory_budget();
  EXPECT_GT(budget.bytes, 0u);
  EXPECT_FALSE(budget.source.empty());
  EXPECT_EQ(gib_text(3ull << 30), "3.0 GiB");
  EXPECT_EQ(gib_text(24ull << 30), "24 GiB");
}

}  // namespace
}  // namespace kiln::cli
