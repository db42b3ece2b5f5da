// SPDX-License-Identifier: Apache-2.0
#include "core/buffer_registry.h"

#include <mutex>

#include "base/log.h"

namespace ufile {

Status BufferRegistry::Add(const RegisteredBuffer &buf) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  auto next = by_base_.lower_bound(buf.base);
  if (next != by_base_.end() && next->first < buf.base + buf.length)
    return Status::Op(CU_FILE_MEMORY_ALREADY_REGISTERED);
  if (next != by_base_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.length > buf.base)
      return Status::Op(CU_FILE_MEMORY_ALREADY_REGISTERED);
  }
  const bool device = buf.mem.needs_copy();
  if (device && budget_ && !budget_->TryCharge(PinnedBudget::kRegistered, buf.length)) {
    UFILE_LOG_ERROR("cuFileBufRegister(%p, %zu): %s", reinterpret_cast<void *>(buf.base),
                    buf.length, budget_->Refusal(PinnedBudget::kRegistered, buf.length).c_str());
    return Status::Op(CU_FILE_GPU_MEMORY_PINNING_FAILED);
  }
  by_base_.emplace(buf.base, buf);
  if (device) device_bytes_ += buf.length;
  return Status::Ok();
}

Status BufferRegistry::Remove(uintptr_t base) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  auto it = by_base_.find(base);
  if (it == by_base_.end()) return Status::Op(CU_FILE_MEMORY_NOT_REGISTERED);
  if (it->second.mem.needs_copy()) {
    device_bytes_ -= it->second.length;
    if (budget_) budget_->Release(PinnedBudget::kRegistered, it->second.length);
  }
  by_base_.erase(it);
  return Status::Ok();
}

std::optional<RegisteredBuffer> BufferRegistry::Find(uintptr_t base) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = by_base_.find(base);
  if (it == by_base_.end()) return std::nullopt;
  return it->second;
}

size_t BufferRegistry::count() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return by_base_.size();
}

size_t BufferRegistry::device_bytes() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return device_bytes_;
}

}  // namespace ufile
