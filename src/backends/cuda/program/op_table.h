// What the CUDA backend compiles, per operator: one table entry with the check of a node (why the backend
// cannot run it; empty when it can) and the builder's case for it. An operator with no entry has no CUDA
// kernel: supports() is false for it, and adding an operator to the graph needs no edit here. The table
// is the one place both CudaBackend::supports and the builder's dispatch read, so they cannot disagree.
#pragma once

#include <string>

#include "graph/graph.h"

namespace kiln::cuda {

class ProgramBuilder;

struct CudaOp {
  OpKind op;
  std::string (*unsupported)(const Graph& graph, const Node& node);
  void (ProgramBuilder::*add)(NodeId id);  // null: no step of its own (folded into another)
};

// The entry of `op`, or null when the backend has no kernel for it.
const CudaOp* find_cuda_op(OpKind op);

// Why the backend cannot run `node`, or empty when it can.
std::string unsupported_reason(const Graph& graph, const Node& node);

}  // namespace kiln::cuda
