// rpb/train/dist/distributed.h: rpb's processes past one machine. The one module that talks to MPI (OpenMPI from
// Debian): it alone includes mpi.h, and without MPI at build time (cmake -DRPB_MPI=OFF, or no libopenmpi-dev) it
// is a single process with the same interface.
//
// MPI starts only when the process was launched by an MPI launcher (mpirun / mpiexec / srun set
// OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_SIZE); a plain `build/rpb ...` never touches MPI and is rank 0 of 1.
// Every call below is collective over all ranks (MPI_COMM_WORLD) unless it says otherwise, and throws rpb::Error
// naming the MPI call and MPI's message when it fails. When a command ends, every rank settles its ending with the
// others (settle_ending, cli/main.cpp): an error every rank met ends the job through MPI_Finalize; a rank that
// failed alone ends the whole job with abort(), so no rank waits forever in a collective the failed one will not
// reach.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rpb::dist {

/// Initializes MPI for the lifetime of the object when the environment says an MPI launcher started the process
/// (MPI_THREAD_FUNNELED: only the main thread calls MPI; the thread pool's workers never do), and finalizes it on
/// destruction. Also sizes rpb's thread pool for the ranks sharing this node when RPB_NUM_THREADS is not set:
/// max(1, hardware threads / ranks on the node). One per process (cli/main.cpp). Throws rpb::Error when MPI fails
/// to start (the caller ends the process with abort()).
class Session {
 public:
  Session(int& argc, char**& argv);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
};

/// True when rpb was built with MPI.
bool built_with_mpi();
/// The MPI library's name and version ("Open MPI v4.1.4, ..."), or "" when built without MPI.
std::string library_version();
/// True when MPI is running (a Session started it).
bool initialized();
/// This process's rank in [0, size()) and the number of processes; 0 and 1 without MPI.
int rank();
int size();
/// Ranks on this node (MPI_COMM_TYPE_SHARED); 1 without MPI.
int local_size();
/// The threads a rank uses by default: max(1, hardware threads / local_size()).
int default_threads();

/// In-place sums over all ranks: every rank ends with the same values.
void allreduce_sum(float* data, std::size_t n);
void allreduce_sum(double* data, std::size_t n);
/// In-place maximum over all ranks.
void allreduce_max(int64_t* data, std::size_t n);
/// Rank `root`'s bytes to every rank (`bytes` must be the same on all).
void broadcast(void* data, std::size_t bytes, int root = 0);
/// Rank `root`'s string to every rank (any length).
void broadcast(std::string& s, int root = 0);
void barrier();

/// Point to point, for the sweeps' work queue (train/sweep/sweep.cpp): sends `values` to rank `to` with `tag`.
void send(const std::vector<int64_t>& values, int to, int tag);
/// Receives a message with `tag` from any rank into `values` (its length is the message's); returns the sender.
int receive(std::vector<int64_t>& values, int tag);
/// True when a message with `tag` from any rank is waiting (MPI_Iprobe: never blocks).
bool message_waiting(int tag);

/// Runs `f` on rank `root` alone and tells every rank how it went: when it threw rpb::Error, the other ranks throw
/// the same message (an rpb::UsageError stays one) and `root` rethrows its own, so an error only `root` can see (a
/// run folder only rank 0 opens) ends every rank alike instead of leaving them waiting in the next collective.
/// Any other exception ends `root` alone. Without MPI, or with one rank: f().
void on_root(const std::function<void()>& f, int root = 0);

/// How the ranks' command ended, once settled (settle_ending).
struct Settled {
  bool every_rank = false;            // every rank reached settle_ending; false: this rank must abort()
  std::vector<int> codes;             // every_rank: each rank's exit code, by rank (0: done)
  std::vector<std::string> messages;  // every_rank, on rank 0: each rank's message, by rank ("" for none)
};

/// Called once by every rank when its command has ended with exit code `code` (0: done) and `message` (what it
/// would print; "" when it has printed its own). A rank that is done waits for the others as long as they take
/// (polling every few milliseconds, so it leaves the cores to the ranks still working); a rank with a non-zero
/// code waits at most `wait`: when every rank arrives in time (an error they all met alike: a bad config, a
/// refused run folder; or a stop all ranks made) they exchange their codes (and rank 0 gets the messages), and
/// all can exit through MPI_Finalize; when one does not (it waits in a collective for the failed rank, or works
/// on), the result says so and the caller ends the job with abort(). Uses a communicator of its own, so a rank
/// still inside another collective is never mistaken for one that ended. Never throws. Without MPI, or with one
/// rank: every_rank, {code}, {message}. cli/main.cpp waits 10 s, or RPB_SETTLE_WAIT_S seconds when set (a number
/// in [0.1, 600]; anything else is an error naming the variable).
Settled settle_ending(int code, const std::string& message, std::chrono::milliseconds wait);

/// Ends every rank of the job with `code` (MPI_Abort) after flushing this process's stderr; without MPI, or
/// before MPI started, std::exit(code). `code` should not be 0: MPI_Abort(0) may end the job with status 0. Called by a rank that failed, so no other rank hangs.
[[noreturn]] void abort(int code);

}  // namespace rpb::dist
