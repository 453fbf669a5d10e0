// The warpgroup matrix instructions kiln's Hopper kernels issue (sm_90a): D[64 x N] (+)= A[64 x K] * B[K x N]
// with A and B read from shared memory through matrix descriptors (ptx.cuh), both K-major, and D in
// registers of the 128 threads of a warpgroup: f32 for fp16 and E4M3 operands, s32 for int8 ones (exact
// integer sums). One step covers 32 bytes of K: 16 fp16 values, or 32 E4M3 or int8 codes.
// `accumulate` 0 overwrites D (the first step of a tile), 1 adds to it. Inline assembly takes no arrays, so
// each width's accumulator list is spelled out once, as a macro every operand type uses (its register
// constraint, "+f" or "+r", an argument).
#pragma once

#include <cstdint>
#include <type_traits>

#include "backends/cuda/kernels/hopper/operands.h"

// The 32 accumulators of an N = 64 step, then its descriptors and predicate operands.
#define KILN_WGMMA_D64 "{" \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31" \
  "}, %32, %33, p"
#define KILN_WGMMA_PREDICATE64 "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
#define KILN_WGMMA_OUT64(d, C) \
  C(d[0]), C(d[1]), C(d[2]), C(d[3]), C(d[4]), C(d[5]), C(d[6]), C(d[7]), \
  C(d[8]), C(d[9]), C(d[10]), C(d[11]), C(d[12]), C(d[13]), C(d[14]), C(d[15]), \
  C(d[16]), C(d[17]), C(d[18]), C(d[19]), C(d[20]), C(d[21]), C(d[22]), C(d[23]), \
  C(d[24]), C(d[25]), C(d[26]), C(d[27]), C(d[28]), C(d[29]), C(d[30]), C(d[31])

// The 64 accumulators of an N = 128 step, then its descriptors and predicate operands.
#define KILN_WGMMA_D128 "{" \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63" \
  "}, %64, %65, p"
#define KILN_WGMMA_PREDICATE128 "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
#define KILN_WGMMA_OUT128(d, C) \
  C(d[0]), C(d[1]), C(d[2]), C(d[3]), C(d[4]), C(d[5]), C(d[6]), C(d[7]), \
  C(d[8]), C(d[9]), C(d[10]), C(d[11]), C(d[12]), C(d[13]), C(d[14]), C(d[15]), \
  C(d[16]), C(d[17]), C(d[18]), C(d[19]), C(d[20]), C(d[21]), C(d[22]), C(d[23]), \
  C(d[24]), C(d[25]), C(d[26]), C(d[27]), C(d[28]), C(d[29]), C(d[30]), C(d[31]), \
  C(d[32]), C(d[33]), C(d[34]), C(d[35]), C(d[36]), C(d[37]), C(d[38]), C(d[39]), \
  C(d[40]), C(d[41]), C(d[42]), C(d[43]), C(d[44]), C(d[45]), C(d[46]), C(d[47]), \
  C(d[48]), C(d[49]), C(d[50]), C(d[51]), C(d[52]), C(d[53]), C(d[54]), C(d[55]), \
  C(d[56]), C(d[57]), C(d[58]), C(d[59]), C(d[60]), C(d[61]), C(d[62]), C(d[63])

// The 128 accumulators of an N = 256 step, then its descriptors and predicate operands.
#define KILN_WGMMA_D256 "{" \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127" \
  "}, %128, %129, p"
#define KILN_WGMMA_PREDICATE256 "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
#define KILN_WGMMA_OUT256(d, C) \
  C(d[0]), C(d[1]), C(d[2]), C(d[3]), C(d[4]), C(d[5]), C(d[6]), C(d[7]), \
  C(d[8]), C(d[9]), C(d[10]), C(d[11]), C(d[12]), C(d[13]), C(d[14]), C(d[15]), \
  C(d[16]), C(d[17]), C(d[18]), C(d[19]), C(d[20]), C(d[21]), C(d[22]), C(d[23]), \
  C(d[24]), C(d[25]), C(d[26]), C(d[27]), C(d[28]), C(d[29]), C(d[30]), C(d[31]), \
  C(d[32]), C(d[33]), C(d[34]), C(d[35]), C(d[36]), C(d[37]), C(d[38]), C(d[39]), \
  C(d[40]), C(d[41]), C(d[42]), C(d[43]), C(d[44]), C(d[45]), C(d[46]), C(d[47]), \
  C(d[48]), C(d[49]), C(d[50]), C(d[51]), C(d[52]), C(d[53]), C(d[54]), C(d[55]), \
  C(d[56]), C(d[57]), C(d[58]), C(d[59]), C(d[60]), C(d[61]), C(d[62]), C(d[63]), \
  C(d[64]), C(d[65]), C(d[66]), C(d[67]), C(d[68]), C(d[69]), C(d[70]), C(d[71]), \
  C(d[72]), C(d[73]), C(d[74]), C(d[75]), C(d[76]), C(d[77]), C(d[78]), C(d[79]), \
  C(d[80]), C(d[81]), C(d[82]), C(d[83]), C(d[84]), C(d[85]), C(d[86]), C(d[87]), \
  C(d[88]), C(d[89]), C(d[90]), C(d[91]), C(d[92]), C(d[93]), C(d[94]), C(d[95]), \
  C(d[96]), C(d[97]), C(d[98]), C(d[99]), C(d[100]), C(d[101]), C(d[102]), C(d[103]), \
  C(d[104]), C(d[105]), C(d[106]), C(d[107]), C(d[108]), C(d[109]), C(d[110]), C(d[111]), \
  C(d[112]), C(d[113]), C(d[114]), C(d[115]), C(d[116]), C(d[117]), C(d[118]), C(d[119]), \
  C(d[120]), C(d[121]), C(d[122]), C(d[123]), C(d[124]), C(d[125]), C(d[126]), C(d[127])

namespace kiln::cuda::hopper {

// The accumulator type of an operand type.
template <Operand kOperand>
using Accumulator = std::conditional_t<kOperand == Operand::kS8, int, float>;

template <Operand kOperand, int kN>
struct Wgmma;

// The floating-point forms take the scale immediates (1: A and B as they are), fp16 also the transpose
// ones (0: both K-major); E4M3 has no transposed form and int8 neither kind of immediate.
#define KILN_WGMMA_STEP(OPERAND, N, SHAPE_TYPES, IMMEDIATES, CONSTRAINT)                                     \
  template <>                                                                                                \
  struct Wgmma<Operand::OPERAND, N> {                                                                        \
    static constexpr int kRegisters = N / 2;                                                                 \
    __device__ static void step(Accumulator<Operand::OPERAND> (&d)[N / 2], std::uint64_t a, std::uint64_t b, \
                                int accumulate) {                                                            \
      asm volatile(KILN_WGMMA_PREDICATE##N "wgmma.mma_async.sync.aligned." SHAPE_TYPES " " KILN_WGMMA_D##N       \
                   IMMEDIATES ";\n}\n"                                                                       \
                   : KILN_WGMMA_OUT##N(d, CONSTRAINT)                                                        \
                   : "l"(a), "l"(b), "r"(accumulate));                                                       \
    }                                                                                                        \
  };

KILN_WGMMA_STEP(kF16, 64, "m64n64k16.f32.f16.f16", ", 1, 1, 0, 0", "+f")
KILN_WGMMA_STEP(kF16, 128, "m64n128k16.f32.f16.f16", ", 1, 1, 0, 0", "+f")
KILN_WGMMA_STEP(kF16, 256, "m64n256k16.f32.f16.f16", ", 1, 1, 0, 0", "+f")
KILN_WGMMA_STEP(kE4m3, 64, "m64n64k32.f32.e4m3.e4m3", ", 1, 1", "+f")
KILN_WGMMA_STEP(kE4m3, 128, "m64n128k32.f32.e4m3.e4m3", ", 1, 1", "+f")
KILN_WGMMA_STEP(kE4m3, 256, "m64n256k32.f32.e4m3.e4m3", ", 1, 1", "+f")
KILN_WGMMA_STEP(kS8, 64, "m64n64k32.s32.s8.s8", "", "+r")
KILN_WGMMA_STEP(kS8, 128, "m64n128k32.s32.s8.s8", "", "+r")
KILN_WGMMA_STEP(kS8, 256, "m64n256k32.s32.s8.s8", "", "+r")

#undef KILN_WGMMA_STEP

}  // namespace kiln::cuda::hopper
