// rpb/train/dist/distributed.cpp: MPI behind rpb::dist (the only file that includes mpi.h). Built with RPB_HAVE_MPI
// when CMake found MPI and RPB_MPI is on; otherwise every function is the single-process case.
#include "train/dist/distributed.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <thread>

#include "core/error.h"
#include "core/parallel.h"

#ifdef RPB_HAVE_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only: no deprecated C++ bindings (and no libmpi_cxx to link)
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace rpb::dist {

namespace {

// Set by an MPI launcher (Open MPI's mpirun, PMIx launchers, MPICH's Hydra / Slurm's srun).
bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

int hardware_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

bool g_started = false;  // this process called MPI_Init_thread (and has not finalized)
int g_rank = 0, g_size = 1, g_local = 1;

}  // namespace

#ifdef RPB_HAVE_MPI

namespace {

MPI_Comm g_ending = MPI_COMM_NULL;  // settle_ending's own communicator (a duplicate of MPI_COMM_WORLD)

// Throws rpb::Error naming the call and MPI's message when `code` is not MPI_SUCCESS.
void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  throw Error(std::string("mpi: ") + call + " failed on rank " + std::to_string(g_rank) + " of " +
              std::to_string(g_size) + ": " + std::string(text, static_cast<std::size_t>(len)));
}

// MPI counts are int: a longer buffer goes in pieces of at most 2^30 elements.
template <typename F>
void in_pieces(std::size_t n, F&& f) {
  constexpr std::size_t kPiece = std::size_t{1} << 30;
  for (std::size_t at = 0; at < n; at += kPiece) f(at, static_cast<int>(std::min(kPiece, n - at)));
}

}  // namespace

Session::Session(int& argc, char**& argv) {
  if (launched_by_mpi() && !g_started) {
    int provided = 0;
    check(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    g_started = true;
    // Errors come back as codes (turned into rpb::Error by check) instead of aborting inside MPI.
    check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(MPI_COMM_WORLD, &g_rank), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &g_size), "MPI_Comm_size");
    MPI_Comm node;
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node),
          "MPI_Comm_split_type");
    check(MPI_Comm_size(node, &g_local), "MPI_Comm_size");
    MPI_Comm_free(&node);
    check(MPI_Comm_dup(MPI_COMM_WORLD, &g_ending), "MPI_Comm_dup");
    if (std::getenv("RPB_NUM_THREADS") == nullptr) set_num_threads(default_threads());
  }
}

Session::~Session() {
  if (!g_started) return;
  if (g_ending != MPI_COMM_NULL) MPI_Comm_free(&g_ending);
  MPI_Finalize();
  g_started = false;
}

bool built_with_mpi() { return true; }

std::string library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, static_cast<std::size_t>(len));
  const std::size_t cut = s.find_first_of(",\n");
  return cut == std::string::npos ? s : s.substr(0, cut);
}

void allreduce_sum(float* data, std::size_t n) {
  if (g_size == 1) return;
  in_pieces(n, [&](std::size_t at, int count) {
    check(MPI_Allreduce(MPI_IN_PLACE, data + at, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
  });
}

void allreduce_sum(double* data, std::size_t n) {
  if (g_size == 1) return;
  in_pieces(n, [&](std::size_t at, int count) {
    check(MPI_Allreduce(MPI_IN_PLACE, data + at, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
  });
}

void allreduce_max(int64_t* data, std::size_t n) {
  if (g_size == 1) return;
  in_pieces(n, [&](std::size_t at, int count) {
    check(MPI_Allreduce(MPI_IN_PLACE, data + at, count, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  });
}

void broadcast(void* data, std::size_t bytes, int root) {
  if (g_size == 1) return;
  in_pieces(bytes, [&](std::size_t at, int count) {
    check(MPI_Bcast(static_cast<char*>(data) + at, count, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
  });
}

void broadcast(std::string& s, int root) {
  if (g_size == 1) return;
  uint64_t n = s.size();
  broadcast(&n, sizeof n, root);
  s.resize(n);
  broadcast(s.data(), n, root);
}

void barrier() {
  if (g_size == 1) return;
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

void send(const std::vector<int64_t>& values, int to, int tag) {
  check(MPI_Send(values.data(), static_cast<int>(values.size()), MPI_INT64_T, to, tag, MPI_COMM_WORLD), "MPI_Send");
}

int receive(std::vector<int64_t>& values, int tag) {
  MPI_Status status;
  check(MPI_Probe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &status), "MPI_Probe");
  int count = 0;
  check(MPI_Get_count(&status, MPI_INT64_T, &count), "MPI_Get_count");
  values.resize(static_cast<std::size_t>(count));
  check(MPI_Recv(values.data(), count, MPI_INT64_T, status.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
        "MPI_Recv");
  return status.MPI_SOURCE;
}

bool message_waiting(int tag) {
  int flag = 0;
  check(MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE), "MPI_Iprobe");
  return flag != 0;
}

namespace {

// Waits for every rank to start settling: without a limit when this rank is done (`code` 0), else until `wait`.
bool every_rank_arrives(int code, std::chrono::milliseconds wait) {
  MPI_Request arrived;
  if (MPI_Ibarrier(g_ending, &arrived) != MPI_SUCCESS) return false;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (true) {
    int done = 0;
    if (MPI_Test(&arrived, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
    if (done) return true;
    if (code != 0 && std::chrono::steady_clock::now() >= deadline) return false;  // left pending: abort() follows
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// Every rank's message, on rank 0 (elsewhere empty); false when MPI failed.
bool gather_messages(const std::string& message, std::vector<std::string>& out) {
  const int length = static_cast<int>(message.size());
  std::vector<int> lengths(static_cast<std::size_t>(g_size)), at(static_cast<std::size_t>(g_size));
  if (MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, g_ending) != MPI_SUCCESS) return false;
  int total = 0;
  for (int r = 0; r < g_size; ++r) {
    at[static_cast<std::size_t>(r)] = total;
    total += lengths[static_cast<std::size_t>(r)];
  }
  std::string all(static_cast<std::size_t>(g_rank == 0 ? total : 0), '\0');
  if (MPI_Gatherv(message.data(), length, MPI_CHAR, all.data(), lengths.data(), at.data(), MPI_CHAR, 0,
                  g_ending) != MPI_SUCCESS)
    return false;
  if (g_rank == 0)
    for (int r = 0; r < g_size; ++r)
      out.push_back(all.substr(static_cast<std::size_t>(at[static_cast<std::size_t>(r)]),
                               static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)])));
  return true;
}

// settle_ending past one rank.
Settled settle_with_others(int code, const std::string& message, std::chrono::milliseconds wait) {
  Settled s;
  if (!every_rank_arrives(code, wait)) return s;
  s.codes.assign(static_cast<std::size_t>(g_size), 0);
  if (MPI_Allgather(&code, 1, MPI_INT, s.codes.data(), 1, MPI_INT, g_ending) != MPI_SUCCESS) return s;
  if (!gather_messages(message, s.messages)) return s;
  s.every_rank = true;
  return s;
}

}  // namespace

#else  // without MPI: one process

Session::Session(int& /*argc*/, char**& /*argv*/) {
  if (launched_by_mpi())
    std::cerr << "rpb: started by an MPI launcher, but built without MPI (install libopenmpi-dev and rebuild); "
                 "running as one process\n";
}

Session::~Session() = default;

bool built_with_mpi() { return false; }
std::string library_version() { return ""; }
void allreduce_sum(float*, std::size_t) {}
void allreduce_sum(double*, std::size_t) {}
void allreduce_max(int64_t*, std::size_t) {}
void broadcast(void*, std::size_t, int) {}
void broadcast(std::string&, int) {}
void barrier() {}
void send(const std::vector<int64_t>&, int, int) { throw Error("mpi: send without MPI (a single process)"); }
int receive(std::vector<int64_t>&, int) { throw Error("mpi: receive without MPI (a single process)"); }
bool message_waiting(int) { return false; }

#endif

Settled settle_ending(int code, const std::string& message, std::chrono::milliseconds wait) {
  if (!g_started || g_size == 1) return {true, {code}, {message}};
#ifdef RPB_HAVE_MPI
  return settle_with_others(code, message, wait);
#else
  return {};  // unreachable: without MPI nothing starts
#endif
}

void abort(int code) {
  std::cerr.flush();
  std::fflush(stderr);
#ifdef RPB_HAVE_MPI
  if (g_started) MPI_Abort(MPI_COMM_WORLD, code);  // also when Session failed before it knew the size
#endif
  std::exit(code);
}

void on_root(const std::function<void()>& f, int root) {
  if (g_size == 1) {
    f();
    return;
  }
  enum : uint8_t { kDone, kError, kUsageError };
  uint8_t outcome = kDone;
  std::string message;
  std::exception_ptr own;
  if (g_rank == root) {
    try {
      f();
    } catch (const UsageError& e) {
      outcome = kUsageError;
      message = e.message();
      own = std::current_exception();
    } catch (const Error& e) {
      outcome = kError;
      message = e.message();
      own = std::current_exception();
    }
  }
  broadcast(&outcome, sizeof outcome, root);
  broadcast(message, root);
  if (own) std::rethrow_exception(own);
  if (outcome == kUsageError) throw UsageError(message);
  if (outcome == kError) throw Error(message);
}

bool initialized() { return g_started; }
int rank() { return g_rank; }
int size() { return g_size; }
int local_size() { return g_local; }
int default_threads() { return std::max(1, hardware_threads() / std::max(1, g_local)); }

}  // namespace rpb::dist
