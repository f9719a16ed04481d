// Splits a memory-bound product (a decode step's GEMV-like panel products) between the calling
// thread and helper threads without ever waiting for a helper that has not started.
//
// Why not an OpenMP region: its closing barrier waits for every thread of the team, so on a machine
// whose other cores are busy a product waits a whole scheduler time slice for a helper that was not
// running (measured here at load ~17 on 2 cores: a 2-thread decode step 1.6x slower than one
// thread, and llama.cpp, which syncs its threads after every op, at 0.5 tokens/s). Here the caller
// claims chunks itself from a shared counter and only waits for chunks a helper has claimed and is
// running: an absent helper costs nothing, a present one takes half the stream. A helper that
// loses its core mid-chunk still costs a wait, so after such a stall (a wait over 0.5 ms and over
// two of the job's chunks as the caller ran them) the next jobs run on the caller alone, for longer
// after each stall in a row. Each chunk runs the same code whichever thread takes it, so results do
// not depend on the split.
#pragma once

namespace agentrl::engine::cpu {

using ChunkFn = void (*)(void* ctx, int chunk);

// Runs fn(ctx, c) once for every c in [0, chunks), on the calling thread and up to threads - 1
// helpers (started on first use, parked on a condition variable when idle). Serial when threads
// <= 1, chunks <= 1, or another thread is already running a split (nested or concurrent callers).
void RunChunks(int chunks, int threads, ChunkFn fn, void* ctx);

}  // namespace agentrl::engine::cpu
