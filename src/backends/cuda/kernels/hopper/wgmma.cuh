// The warpgroup matrix instructions kiln's Hopper kernels issue (sm_90a): D[64 x N] (+)= A[64 x K] * B[K x N]
// with A and B read from shared memory through matrix descriptors (ptx.cuh), both K-major, and D in f32
// registers of the 128 threads of a warpgroup. One step covers 32 bytes of K: 16 fp16 or 32 E4M3 values.
// `accumulate` 0 overwrites D (the first step of a tile), 1 adds to it. Inline assembly takes no arrays, so
// each width's accumulator list is spelled out once, as a macro both operand types use.
#pragma once

#include <cstdint>

#include "backends/cuda/kernels/hopper/operands.h"

// The 32 accumulators of an N = 64 step, then its descriptors and predicate operands.
#define KILN_WGMMA_D64 "{" \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31" \
  "}, %32, %33, p"
#define KILN_WGMMA_PREDICATE64 "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
#define KILN_WGMMA_OUT64(d) \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])

// The 64 accumulators of an N = 128 step, then its descriptors and predicate operands.
#define KILN_WGMMA_D128 "{" \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63" \
  "}, %64, %65, p"
#define KILN_WGMMA_PREDICATE128 "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
#define KILN_WGMMA_OUT128(d) \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
  "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
  "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
  "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

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
#define KILN_WGMMA_OUT256(d) \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
  "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
  "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
  "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
  "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
  "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
  "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
  "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
  "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
  "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
  "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
  "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])

namespace kiln::cuda::hopper {

template <Operand kOperand, int kN>
struct Wgmma;

// fp16 operands take the transpose immediates (0: both K-major); E4M3 has no transposed form.
#define KILN_WGMMA_STEP(OPERAND, N, SHAPE_TYPES, IMMEDIATES)                                           \
  template <>                                                                                          \
  struct Wgmma<Operand::OPERAND, N> {                                                                  \
    static constexpr int kRegisters = N / 2;                                                           \
    __device__ static void step(float (&d)[N / 2], std::uint64_t a, std::uint64_t b, int accumulate) { \
      asm volatile(KILN_WGMMA_PREDICATE##N "wgmma.mma_async.sync.aligned." SHAPE_TYPES " " KILN_WGMMA_D##N \
                   IMMEDIATES ";\n}\n"                                                                 \
                   : KILN_WGMMA_OUT##N(d)                                                              \
                   : "l"(a), "l"(b), "r"(accumulate));                                                 \
    }                                                                                                  \
  };

KILN_WGMMA_STEP(kF16, 64, "m64n64k16.f32.f16.f16", ", 1, 1, 0, 0")
KILN_WGMMA_STEP(kF16, 128, "m64n128k16.f32.f16.f16", ", 1, 1, 0, 0")
KILN_WGMMA_STEP(kF16, 256, "m64n256k16.f32.f16.f16", ", 1, 1, 0, 0")
KILN_WGMMA_STEP(kE4m3, 64, "m64n64k32.f32.e4m3.e4m3", ", 1, 1")
KILN_WGMMA_STEP(kE4m3, 128, "m64n128k32.f32.e4m3.e4m3", ", 1, 1")
KILN_WGMMA_STEP(kE4m3, 256, "m64n256k32.f32.e4m3.e4m3", ", 1, 1")

#undef KILN_WGMMA_STEP

}  // namespace kiln::cuda::hopper
