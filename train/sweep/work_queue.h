// rpb/train/sweep/work_queue.h: whole jobs handed to the ranks of an MPI job, dynamically (train/dist/distributed.h).
#pragma once

#include <cstdint>
#include <functional>

namespace rpb {

/// What a job calls, often (between training steps), so that rank 0 answers the other ranks' requests for work
/// while it works itself; on other ranks it does nothing.
using ServeRequests = std::function<void()>;

/// Runs jobs 0 .. jobs - 1 once each over the ranks of the job: every rank (rank 0 included) takes the next job
/// as soon as it finishes one, from a counter rank 0 keeps (the others ask it by message), so a slow job never
/// holds up the rest. `work(job, serve)` runs one job on this rank. Returns on every rank when it has no job left;
/// on rank 0 only once every rank's jobs are done. One process: the jobs in order. A rank that throws ends the
/// whole MPI job (cli/main.cpp), so none waits for it.
void run_work_queue(int64_t jobs, const std::function<void(int64_t job, const ServeRequests& serve)>& work);

}  // namespace rpb
