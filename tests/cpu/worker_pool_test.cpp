// SPDX-License-Identifier: Apache-2.0
// engine/worker_pool, against the contract in its header: Run(n) calls fn(0)
// on the calling thread (nothing for n = 0) and offers fn(1..n-1) to pool
// threads; an offer not taken when fn(0) returns is withdrawn; each index
// runs at most once; Run returns after every call that started; nested in a
// pool thread only fn(0) runs, inline. Callers claim work from shared state,
// so the work itself is always done exactly once. Post runs tasks on pool
// threads and the destructor runs what is queued. An offer wakes as many
// sleeping threads as it has helpers, not all of them. No test depends on
// timing (one bounded wait guards against a hang).
#include "engine/worker_pool.h"

#include <dirent.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace ufile {
namespace {

// Counts the calls of each index and the threads they ran on.
struct Calls {
  explicit Calls(size_t n) : count(n) {}
  void Record(size_t i) {
    if (i >= count.size()) {
      ++out_of_range;
      return;
    }
    ++count[i];
    std::lock_guard<std::mutex> lock(mu);
    if (i == 0) index0_thread = std::this_thread::get_id();
    threads.insert(std::this_thread::get_id());
  }
  int Total() const {
    int t = 0;
    for (const auto &c : count) t += c.load();
    return t;
  }
  void ExpectAtMostOnceAndZeroHere() const {
    EXPECT_EQ(out_of_range.load(), 0);
    EXPECT_EQ(count[0].load(), 1);
    for (size_t i = 1; i < count.size(); ++i) EXPECT_LE(count[i].load(), 1) << "index " << i;
    EXPECT_EQ(index0_thread, std::this_thread::get_id());
  }
  std::vector<std::atomic<int>> count;
  std::atomic<int> out_of_range{0};
  std::mutex mu;
  std::thread::id index0_thread;
  std::set<std::thread::id> threads;
};

// The pattern every caller uses: participants claim items until none is left.
struct Work {
  explicit Work(size_t n) : done(n) {}
  void Participate() {
    for (size_t i; (i = next.fetch_add(1)) < done.size();) ++done[i];
  }
  bool EachOnce() const {
    for (const auto &d : done)
      if (d.load() != 1) return false;
    return true;
  }
  std::atomic<size_t> next{0};
  std::vector<std::atomic<int>> done;
};

// OnEachThread (driver open prepares each thread's ring with it): every
// pool thread runs it exactly once, and it returns after all did.
TEST(WorkerPool, OnEachThreadRunsOnEveryPoolThreadOnce) {
  WorkerPool pool(6);
  std::mutex mu;
  std::map<std::thread::id, int> calls;
  pool.OnEachThread([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::lock_guard<std::mutex> lock(mu);
    ++calls[std::this_thread::get_id()];
  });
  EXPECT_EQ(calls.size(), 6u);
  for (const auto &c : calls) EXPECT_EQ(c.second, 1);
  EXPECT_EQ(calls.count(std::this_thread::get_id()), 0u) << "not on the caller";
}

TEST(WorkerPool, RunZeroCallsNothing) {
  WorkerPool pool(2);
  std::atomic<int> called{0};
  pool.Run(0, [&](size_t) { ++called; });
  EXPECT_EQ(called.load(), 0);
}

TEST(WorkerPool, RunOneCallsIndexZeroOnTheCaller) {
  WorkerPool pool(4);
  Calls calls(1);
  pool.Run(1, [&](size_t i) { calls.Record(i); });
  calls.ExpectAtMostOnceAndZeroHere();
  EXPECT_EQ(calls.Total(), 1);
}

TEST(WorkerPool, EachIndexAtMostOnceWhenLargerThanThePool) {
  WorkerPool pool(2);
  for (int rep = 0; rep < 100; ++rep) {
    Calls calls(37);
    pool.Run(37, [&](size_t i) { calls.Record(i); });
    calls.ExpectAtMostOnceAndZeroHere();
    if (HasFailure()) return;
  }
}

TEST(WorkerPool, FreeThreadsTakeTheOffersWhileIndexZeroRuns) {
  WorkerPool pool(3);
  Calls calls(4);
  std::mutex mu;
  std::condition_variable cv;
  int started = 0;
  const auto caller = std::this_thread::get_id();
  std::atomic<int> offers_on_caller{0};
  pool.Run(4, [&](size_t i) {
    calls.Record(i);
    if (i != 0 && std::this_thread::get_id() == caller) ++offers_on_caller;
    std::unique_lock<std::mutex> lock(mu);
    ++started;
    cv.notify_all();
    // Index 0 keeps the offers open until the three idle threads took them
    // (the bound only turns a broken pool into a failure instead of a hang).
    if (i == 0) {
      EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return started == 4; }))
          << "idle pool threads did not take the offers";
    }
  });
  calls.ExpectAtMostOnceAndZeroHere();
  EXPECT_EQ(calls.Total(), 4);
  EXPECT_EQ(offers_on_caller.load(), 0) << "offers run on pool threads";
}

TEST(WorkerPool, ClaimedWorkIsDoneExactlyOnce) {
  WorkerPool pool(3);
  for (size_t n : {size_t{1}, size_t{2}, size_t{4}, size_t{16}}) {
    Work work(1000);
    pool.Run(n, [&](size_t) { work.Participate(); });
    EXPECT_TRUE(work.EachOnce()) << "n " << n;
  }
}

TEST(WorkerPool, ConcurrentRunsFromSeveralThreads) {
  WorkerPool pool(3);
  constexpr int kCallers = 6, kReps = 40;
  std::atomic<int> bad{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < kCallers; ++t)
    callers.emplace_back([&] {
      const auto me = std::this_thread::get_id();
      for (int rep = 0; rep < kReps; ++rep) {
        Work work(257);
        std::vector<std::atomic<int>> count(9);
        std::atomic<bool> zero_here{false};
        pool.Run(9, [&](size_t i) {
          if (i < count.size()) ++count[i];
          if (i == 0) zero_here = std::this_thread::get_id() == me;
          work.Participate();
        });
        if (!work.EachOnce() || !zero_here || count[0] != 1) ++bad;
        for (const auto &c : count)
          if (c.load() > 1) ++bad;
      }
    });
  for (auto &t : callers) t.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(WorkerPool, RunReturnsOnlyAfterEveryStartedCallReturned) {
  WorkerPool pool(2);
  for (int rep = 0; rep < 50; ++rep) {
    std::atomic<int> started{0}, finished{0};
    pool.Run(3, [&](size_t) {
      ++started;
      // Busy without sleeping, so helpers are likely still running when the
      // caller's own call ends.
      for (int spin = 0; spin < 2000; ++spin) std::this_thread::yield();
      ++finished;
    });
    ASSERT_EQ(finished.load(), started.load()) << "rep " << rep;
    ASSERT_GE(started.load(), 1);
  }
}

TEST(WorkerPool, NestedRunOnAPoolThreadRunsInlineWithoutDeadlock) {
  WorkerPool pool(2);
  const auto caller = std::this_thread::get_id();
  std::atomic<int> nested_on_pool{0}, bad{0};
  // Saturate the pool with outer calls that each nest a Run: a nested Run
  // that waited for pool threads would deadlock here.
  pool.Run(3, [&](size_t) {
    const auto me = std::this_thread::get_id();
    if (me == caller) {
      // Keep the offers open until both pool threads took theirs (bounded:
      // a broken pool fails below instead of hanging).
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (nested_on_pool.load() < 2 && std::chrono::steady_clock::now() < until)
        std::this_thread::yield();
      return;  // the caller is not a pool thread
    }
    ++nested_on_pool;
    std::vector<std::atomic<int>> count(5);
    pool.Run(5, [&](size_t i) {
      if (i < count.size()) ++count[i];
      if (std::this_thread::get_id() != me) ++bad;
    });
    if (count[0] != 1) ++bad;
    for (size_t i = 1; i < count.size(); ++i)
      if (count[i] != 0) ++bad;  // only fn(0) runs nested in a pool thread
  });
  // The same through Post, where the nesting thread is surely a pool thread.
  std::atomic<bool> done{false};
  pool.Post([&] {
    ++nested_on_pool;
    const auto me = std::this_thread::get_id();
    int calls = 0;
    pool.Run(5, [&](size_t i) {
      ++calls;
      if (i != 0 || std::this_thread::get_id() != me) ++bad;
    });
    if (calls != 1) ++bad;
    done = true;
    done.notify_all();
  });
  done.wait(false);
  EXPECT_EQ(nested_on_pool.load(), 3);
  EXPECT_EQ(bad.load(), 0);
}

TEST(WorkerPool, OffersNotTakenAreWithdrawn) {
  // Both pool threads are blocked in posted tasks for the whole Run, so
  // nobody can take the offers: only fn(0) runs, and after the pool frees up
  // the withdrawn offers must not call fn (its state is gone by then).
  Calls calls(6);
  {
    WorkerPool pool(2);
    std::atomic<bool> release{false};
    std::atomic<int> blocked{0};
    for (int i = 0; i < 2; ++i)
      pool.Post([&] {
        ++blocked;
        release.wait(false);
      });
    while (blocked.load() < 2) std::this_thread::yield();
    pool.Run(6, [&](size_t i) { calls.Record(i); });
    EXPECT_EQ(calls.Total(), 1);
    release = true;
    release.notify_all();
  }  // joins: the queued offers have run (and done nothing) by now
  calls.ExpectAtMostOnceAndZeroHere();
  EXPECT_EQ(calls.Total(), 1);
}

// Voluntary context switches of every thread of this process, by thread id
// (/proc/self/task/*/status): a sleeping thread that is woken adds one.
std::map<int, long> VoluntarySwitches() {
  std::map<int, long> out;
  DIR *d = opendir("/proc/self/task");
  if (!d) return out;
  while (dirent *e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/status");
    for (std::string line; std::getline(f, line);)
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0)
        out[std::stoi(e->d_name)] = std::stol(line.substr(24));
  }
  closedir(d);
  return out;
}

// The counts of the threads not in `others`, once none of them has switched
// for 20 ms (every pool thread is asleep); gives up after about 4 s.
std::map<int, long> SettledSwitches(const std::map<int, long> &others) {
  auto snap = [&] {
    std::map<int, long> m = VoluntarySwitches();
    for (const auto &[tid, n] : others) m.erase(tid);
    return m;
  };
  std::map<int, long> last = snap();
  for (int i = 0; i < 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::map<int, long> now = snap();
    if (now == last) return now;
    last = std::move(now);
  }
  return last;
}

TEST(WorkerPool, AnOfferWakesOnlyAsManySleepersAsItHasHelpers) {
  const std::map<int, long> others = VoluntarySwitches();  // threads not of the pool
  WorkerPool pool(8);
  int woken = 0;
  for (int round = 0; round < 3; ++round) {
    const std::map<int, long> before = SettledSwitches(others);
    std::atomic<int> calls{0};
    pool.Run(3, [&](size_t) { ++calls; });
    for (const auto &[tid, n] : SettledSwitches(others)) {
      auto it = before.find(tid);
      if (it != before.end() && n > it->second) ++woken;
    }
    EXPECT_GE(calls.load(), 1);
  }
  // Two helpers per round (one more allowed); waking all eight sleepers
  // would give 24.
  EXPECT_LE(woken, 9) << "pool threads woken over 3 offers of two helpers each";
}

TEST(WorkerPool, EmptyPoolRunsIndexZeroOnly) {
  WorkerPool pool(0);
  EXPECT_EQ(pool.size(), 0u);
  Calls calls(5);
  Work work(100);
  pool.Run(5, [&](size_t i) {
    calls.Record(i);
    work.Participate();
  });
  calls.ExpectAtMostOnceAndZeroHere();
  EXPECT_EQ(calls.Total(), 1);
  EXPECT_TRUE(work.EachOnce());
}

TEST(WorkerPool, PostRunsOnAPoolThread) {
  WorkerPool pool(2);
  std::atomic<bool> done{false};
  std::thread::id ran_on;
  pool.Post([&] {
    ran_on = std::this_thread::get_id();
    done = true;
    done.notify_all();
  });
  done.wait(false);
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

// top -H, gdb and ufile-bench --thread-cpu tell ufile's threads by name.
TEST(WorkerPool, ItsThreadsAreNamedUfilePool) {
  WorkerPool pool(1);
  std::atomic<bool> done{false};
  std::string name;
  pool.Post([&] {
    std::ifstream comm("/proc/thread-self/comm");
    std::getline(comm, name);
    done = true;
    done.notify_all();
  });
  done.wait(false);
  EXPECT_EQ(name, "ufile-pool");
}

TEST(WorkerPool, DestructorRunsEveryQueuedTask) {
  std::atomic<int> ran{0};
  {
    WorkerPool pool(2);
    for (int i = 0; i < 500; ++i) pool.Post([&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 500);
}

}  // namespace
}  // namespace ufile
