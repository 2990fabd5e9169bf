#include "unit/coll/ucx_world.h"

#include <barrier>
#include <string>
#include <thread>

#include "base/config.h"
#include "base/environment.h"
#include "base/log.h"

namespace psdp::coll::test {
namespace {

constexpr double kSetupSeconds = 60;

// PSDP_LOG_LEVEL / PSDP_LOG_FILE still apply, for debugging a failing case.
Logger rankLogger(int rank) {
  auto config = Config::resolve(nullptr, ProcessEnvironment::instance());
  auto logger = makeRankLogger(rank, config.isOk() ? config.value() : Config::defaults());
  return logger.isOk() ? logger.value() : nullptr;
}

Status firstError(const std::vector<Status>& statuses) {
  for (size_t rank = 0; rank < statuses.size(); ++rank) {
    if (!statuses[rank].isOk()) return statuses[rank].withContext(fmt::format("rank {}", rank));
  }
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<UcxWorld>> UcxWorld::create(int nranks, psdp_progress_mode_t mode,
                                                   const transport::ucx::UcxOptions& options) {
  std::unique_ptr<UcxWorld> world(new UcxWorld(mode));
  world->transports_.resize(static_cast<size_t>(nranks));
  std::vector<std::vector<std::byte>> addresses(static_cast<size_t>(nranks));
  std::vector<Status> created(static_cast<size_t>(nranks));
  std::vector<Status> connected(static_cast<size_t>(nranks));
  std::barrier published(nranks);
  Deadline deadline = Deadline::after(kSetupSeconds);
  // Every rank publishes its address, then all connect at once: connect() is collective.
  world->runRanks([&](int rank) {
    auto index = static_cast<size_t>(rank);
    transport::TransportParams params{rank, nranks, mode, rankLogger(rank)};
    auto transport = transport::ucx::createUcxTransport(params, options);
    if (transport.isOk()) {
      world->transports_[index] = std::move(transport).value();
      auto address = world->transports_[index]->localAddress();
      if (address.isOk()) addresses[index] = std::move(address).value();
      created[index] = address.status();
    } else {
      created[index] = transport.status();
    }
    published.arrive_and_wait();
    if (firstError(created).isOk()) connected[index] = world->transports_[index]->connect(addresses, deadline);
  });
  PSDP_RETURN_IF_ERROR(firstError(created));
  PSDP_RETURN_IF_ERROR(firstError(connected));
  return world;
}

UcxWorld::~UcxWorld() {
  if (!closed_) (void)close();
}

void UcxWorld::runRanks(const std::function<void(int rank)>& fn) {
  std::vector<std::jthread> threads;
  threads.reserve(transports_.size());
  for (int rank = 0; rank < size(); ++rank) threads.emplace_back(fn, rank);
}

Status UcxWorld::close() {
  closed_ = true;
  std::vector<Status> statuses(transports_.size());
  Deadline deadline = Deadline::after(kSetupSeconds);
  runRanks([&](int rank) {
    auto index = static_cast<size_t>(rank);
    if (transports_[index]) statuses[index] = transports_[index]->close(deadline);
  });
  return firstError(statuses);
}

}  // namespace psdp::coll::test
