// OpKind, the list of operators, lives in op_info.h beside the table that describes each one, so that an
// operator's enum entry and its row are written in one header.
#pragma once

#include "graph/op_info.h"
