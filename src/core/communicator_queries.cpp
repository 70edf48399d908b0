// braid::Communicator's questions about itself: rank and size, placement, transports and algorithms, and its state.
#include <string>

#include "algorithms/engine.hpp"
#include "base/error.hpp"
#include "braid/braid.hpp"
#include "core/communicator_impl.hpp"

namespace braid {

int Communicator::rank() const { return impl_->rank(); }
int Communicator::size() const { return impl_->size(); }
std::int64_t Communicator::sequenceNumber() const { return impl_->sequenceNumber(); }
int Communicator::hostCount() const { return impl_->placement().hosts(); }
std::string Communicator::flightRecord() const { return impl_->flightRecord(); }
int Communicator::localRank() const { return impl_->placement().localRank; }
int Communicator::localSize() const { return impl_->placement().localSize; }
int Communicator::hostOf(int rank) const {
  if (rank < 0 || rank >= size()) {
    fail(ErrorCode::kInvalidArgument, {.rank = this->rank(), .op = "hostOf"}, "rank ", rank, " out of range for ",
         size(), " ranks");
  }
  return impl_->placement().hostOf[static_cast<std::size_t>(rank)];
}
std::string Communicator::hostName(int rank) const {
  const auto& names = impl_->placement().hostNames;
  return names[static_cast<std::size_t>(hostOf(rank))];
}
std::string Communicator::transportName(Memory memory) const {
  if (memory == Memory::kHost) return impl_->transportName();
  const Engine* device = impl_->deviceEngine();
  return device != nullptr ? device->transportName() : "";
}
std::string Communicator::allreduceAlgorithm(std::size_t bytes, Memory memory) const {
  if (memory == Memory::kHost) return impl_->allreduceAlgorithm(bytes);
  const Engine* device = impl_->deviceEngine();
  return device != nullptr ? device->allreduceAlgorithm(bytes) : "";
}
std::string Communicator::explain(std::size_t bytes, Memory memory) const {
  if (memory == Memory::kHost) return impl_->explainAllreduce(bytes);
  const Engine* device = impl_->deviceEngine();
  return device != nullptr ? device->explainAllreduce(bytes) : "";
}
std::string Communicator::linkDescription() { return impl_->linkDescription(); }
void Communicator::abort() { impl_->abort(); }
std::optional<Error> Communicator::asyncError() const { return impl_->asyncError(); }

}  // namespace braid
