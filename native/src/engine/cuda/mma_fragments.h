// Which (row, column) of a tile each register of a warp-level mma.sync.m16n8k16 bf16 fragment holds,
// per lane: PTX ISA "Matrix Fragments for mma.m16n8k16 with floating point type". Plain constexpr
// functions, so the tensor-core attention (attention_mma.cu) and a host test (packages/engine/test/
// attention-mma-fragments.test.ts, compiled with g++) use the same maps. g = lane / 4 (the lane's
// group), t = lane % 4 (its index in the group).
//   A (16 x 16, row-major, 4 x b32): register r holds A[ARow(lane, r)][ACol(lane, r) + 0 / + 1]
//   B (16 x 8, "col": k x n, 2 x b32): register r holds B[BK(lane, r) + 0 / + 1][BN(lane)]
//   C (16 x 8 f32, 4 floats):          element i is C[CRow(lane, i)][CCol(lane, i)]
// The low 16 bits of a b32 register hold the first (lower-index) element of its pair. Two C tiles
// side by side (columns 0-7, 8-15) are, element for element, one A tile: A register r of the pair
// is C tile r / 2, elements 2 (r % 2) and 2 (r % 2) + 1 (CToAIndex), which is how P = softmax(S)
// goes from the S = Q K^T accumulators straight into the P V product with no shared memory.
#pragma once

#if defined(__CUDACC__)
#define AGENTRL_HD __host__ __device__
#else
#define AGENTRL_HD
#endif

namespace agentrl::engine::gpu::mma {

constexpr int kM = 16, kN = 8, kK = 16;

AGENTRL_HD constexpr int ARow(int lane, int reg) { return (lane >> 2) + 8 * (reg & 1); }
AGENTRL_HD constexpr int ACol(int lane, int reg) { return 2 * (lane & 3) + 8 * (reg >> 1); }
AGENTRL_HD constexpr int BK(int lane, int reg) { return 2 * (lane & 3) + 8 * reg; }
AGENTRL_HD constexpr int BN(int lane) { return lane >> 2; }
AGENTRL_HD constexpr int CRow(int lane, int i) { return (lane >> 2) + 8 * (i >> 1); }
AGENTRL_HD constexpr int CCol(int lane, int i) { return 2 * (lane & 3) + (i & 1); }
// A register `reg` of a 16-wide pair of C tiles: tile CToATile(reg), elements CToAIndex(reg) + 0 / 1.
AGENTRL_HD constexpr int CToATile(int reg) { return reg >> 1; }
AGENTRL_HD constexpr int CToAIndex(int reg) { return 2 * (reg & 1); }

// ldmatrix.x4 (8 x 8 b16 matrices; lane l gives row l % 8 of matrix l / 8): the row and column
// offsets each lane points at so that the 4 registers come out as
//   "A order" (LdmRowA / LdmColA): matrix i at rows + 8 (i % 2), columns + 8 (i / 2): one A fragment
//     of a 16 x 16 block, or with .trans the B fragments of n-tiles n0, n0 + 8 of a [k][n] tile;
//   "B order" (LdmRowB / LdmColB): rows + 8 (i / 2), columns + 8 (i % 2): the B fragments (b0, b1)
//     of n-tiles n0 and n0 + 8 of a [n][k] tile.
AGENTRL_HD constexpr int LdmRowA(int lane) { return (lane & 7) + 8 * ((lane >> 3) & 1); }
AGENTRL_HD constexpr int LdmColA(int lane) { return 8 * (lane >> 4); }
AGENTRL_HD constexpr int LdmRowB(int lane) { return (lane & 7) + 8 * (lane >> 4); }
AGENTRL_HD constexpr int LdmColB(int lane) { return 8 * ((lane >> 3) & 1); }

}  // namespace agentrl::engine::gpu::mma
