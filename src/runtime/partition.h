// Splitting a graph between backends: each live node is placed on one of them (an index the caller
// gives meaning to, e.g. 0: the backend asked for, 1: the CPU fallback), the nodes are put in an order
// that keeps each placement's nodes together, and every maximal run of one placement becomes a segment:
// a Graph of its own whose inputs are the values it reads from outside (graph inputs and values other
// segments compute) and whose outputs are the values later segments or the graph's outputs need.
// Constants are copied into each segment that reads them (tensors share storage) and node names are
// kept, so profiles and per-layer choices stored in plans still match by name. Pure graph code.
#pragma once

#include <vector>

#include "graph/graph.h"

namespace kiln {

struct Segment {
  int placement = 0;
  std::vector<NodeId> nodes;     // nodes of the whole graph, in the order the segment runs them
  std::vector<ValueId> inputs;   // whole-graph values behind `graph`'s inputs, in the same order
  std::vector<ValueId> outputs;  // whole-graph values behind `graph`'s outputs, in the same order
  Graph graph;                   // the segment alone; its values keep the whole graph's names and shapes
};

// Per node id: whether the node computes from constants only, directly or through other such nodes
// (dead nodes: false).
std::vector<bool> computes_from_constants(const Graph& graph);

// Live nodes in an order where producers precede readers and each placement's nodes stay together as
// long as they can: among the nodes ready to run, the earliest one with the current placement goes
// next. Nodes that compute only from constants (an FP8 weight's dequantize) go right before their
// first reader, so they land in its segment.
std::vector<NodeId> placement_order(const Graph& graph, const std::vector<int>& placement);

// `placement` holds one entry per node id (dead nodes' entries are ignored). Fails if a node's
// placement is negative.
std::vector<Segment> split_graph(const Graph& graph, const std::vector<int>& placement);

}  // namespace kiln
