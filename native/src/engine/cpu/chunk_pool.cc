// See chunk_pool.h. One job at a time: `state_` packs the job's generation, its chunk count and
// the next unclaimed chunk, so a claim (one compare-and-swap) can only succeed on the job it read;
// the job's fn / ctx are published before its state and never rewritten before all its chunks are
// done, so whoever claims a chunk of job g has read job g's fn / ctx.
#include "engine/cpu/chunk_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define AGENTRL_PAUSE() _mm_pause()
#else
#define AGENTRL_PAUSE() std::this_thread::yield()
#endif

namespace agentrl::engine::cpu {
namespace {

constexpr uint64_t kFieldBits = 20;  // chunks per job < 2^20
constexpr uint64_t kFieldMask = (uint64_t{1} << kFieldBits) - 1;
// A helper spins this many pauses (~50 us) for the next job before it parks: decode issues a
// product every ~0.1 ms, so between them it stays awake without a syscall.
constexpr int kSpinPauses = 2000;

// A wait for a helper's chunk this long (some 10x a decode chunk's work), and over two chunks of
// this job's, means the helper lost its core.
constexpr std::chrono::microseconds kStalled{500};
// Jobs run serially after a stall: from about one decode step's worth up to a few hundred steps.
constexpr int kMinBackoff = 64, kMaxBackoff = 1 << 15;

constexpr uint64_t Pack(uint64_t gen, uint64_t total, uint64_t next) {
  return (gen << (2 * kFieldBits)) | (total << kFieldBits) | next;
}

class Pool {
 public:
  void Run(int chunks, int threads, ChunkFn fn, void* ctx) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock() || static_cast<uint64_t>(chunks) > kFieldMask || serial_left_ > 0) {
      if (busy.owns_lock()) --serial_left_;
      for (int c = 0; c < chunks; ++c) fn(ctx, c);
      return;
    }
    Grow(threads - 1);
    active_.store(threads - 1, std::memory_order_relaxed);
    fn_.store(fn, std::memory_order_relaxed);
    ctx_.store(ctx, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    gen_ = (gen_ + 1) & ((uint64_t{1} << (64 - 2 * kFieldBits)) - 1);
    state_.store(Pack(gen_, static_cast<uint64_t>(chunks), 0), std::memory_order_release);
    posted_.store(gen_, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      cv_.notify_all();
    }
    const auto start = std::chrono::steady_clock::now();
    const int own = Work(gen_);
    // Left to wait for: chunks a helper claimed and is running. A wait much longer than a chunk
    // takes this thread means the helper was descheduled mid-chunk (the machine's cores are busy):
    // then the next jobs run on this thread alone, for twice as many jobs after each such wait in a
    // row (results are the same either way). A running helper's last chunk can outlast this
    // thread's by up to one chunk, so the bound is two chunks' time, and never under kStalled.
    if (done_.load(std::memory_order_acquire) < chunks) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; done_.load(std::memory_order_acquire) < chunks; ++i) {
        if (i < kSpinPauses) AGENTRL_PAUSE();
        else std::this_thread::yield();
      }
      const auto waited = std::chrono::steady_clock::now() - t0;
      if (waited > kStalled && own > 0 && waited > 2 * (t0 - start) / own) {
        backoff_ = std::min(backoff_ * 2, kMaxBackoff);
        serial_left_ = backoff_;
        return;
      }
    }
    backoff_ = std::max(kMinBackoff, backoff_ / 2);
  }

 private:
  // Claims and runs chunks of job `gen` until none is left or another job is posted; returns how
  // many this thread ran.
  int Work(uint64_t gen) {
    for (int ran = 0;; ) {
      uint64_t s = state_.load(std::memory_order_acquire);
      if ((s >> (2 * kFieldBits)) != gen) return ran;
      const uint64_t total = (s >> kFieldBits) & kFieldMask, next = s & kFieldMask;
      if (next >= total) return ran;
      const ChunkFn fn = fn_.load(std::memory_order_relaxed);
      void* ctx = ctx_.load(std::memory_order_relaxed);
      if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel)) {
        fn(ctx, static_cast<int>(next));
        done_.fetch_add(1, std::memory_order_release);
        ++ran;
      }
    }
  }

  void Grow(int helpers) {
    while (static_cast<int>(helpers_.size()) < helpers) {
      const int index = static_cast<int>(helpers_.size());
      helpers_.emplace_back([this, index] { Helper(index); });
      helpers_.back().detach();  // the pool lives as long as the process
    }
  }

  // Helper `index` takes part in jobs posted for more than `index` helpers (the thread setting may shrink).
  void Helper(int index) {
    uint64_t seen = posted_.load(std::memory_order_acquire);
    for (;;) {
      for (int i = 0; i < kSpinPauses && posted_.load(std::memory_order_acquire) == seen; ++i) AGENTRL_PAUSE();
      if (posted_.load(std::memory_order_acquire) == seen) {
        std::unique_lock<std::mutex> lock(mu_);
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        cv_.wait(lock, [&] { return posted_.load(std::memory_order_seq_cst) != seen; });
        sleepers_.fetch_sub(1, std::memory_order_seq_cst);
      }
      seen = posted_.load(std::memory_order_acquire);
      if (index < active_.load(std::memory_order_relaxed)) Work(seen);
    }
  }

  std::mutex busy_, mu_;
  std::condition_variable cv_;
  std::vector<std::thread> helpers_;
  std::atomic<uint64_t> state_{0}, posted_{0};
  std::atomic<int> done_{0}, sleepers_{0}, active_{0};
  std::atomic<ChunkFn> fn_{nullptr};
  std::atomic<void*> ctx_{nullptr};
  // Written by the thread holding busy_ only.
  uint64_t gen_ = 0;
  int serial_left_ = 0, backoff_ = kMinBackoff / 2;
};

}  // namespace

void RunChunks(int chunks, int threads, ChunkFn fn, void* ctx) {
  if (threads <= 1 || chunks <= 1) {
    for (int c = 0; c < chunks; ++c) fn(ctx, c);
    return;
  }
  static Pool* pool = new Pool();  // never destroyed: detached helpers may still be parked in it
  pool->Run(chunks, threads, fn, ctx);
}

}  // namespace agentrl::engine::cpu
