// SPDX-License-Identifier: Apache-2.0
// One fuzz input as a sequence of cuFile calls: each Step() decodes one
// operation from the input, works out from the model what the library must
// answer, makes the call and checks the answer and every byte of memory.
// Operations whose effect the model cannot know in advance (an I/O over
// memory it does not own, a write racing a pending batch entry on the same
// bytes) are decoded and skipped, never issued.
#pragma once

#include <cufile.h>

#include <string>

#include "api_model.h"
#include "byte_reader.h"

namespace ufile::fuzz {

class Sequence {
 public:
  Sequence(Model &m, ByteReader &r) : m_(m), r_(r) {}
  void Step();
  // Collects every event, checks the file, releases every handle, buffer
  // and batch and closes the driver.
  void Finish();

 private:
  // api_ops.cpp: driver, handles, buffers, synchronous I/O
  void StageKnobsIfClosed();
  void DriverOpen();
  void DriverClose();
  void SetMaxDirectIo();
  void HandleRegister();
  void HandleDeregister();
  void BufRegister();
  void BufDeregister();
  void SyncIo(bool write);
  void Fill();
  Io DecodeIo(bool write);
  CUfileHandle_t PickHandle();
  const char *PickBase();
  // api_batch.cpp
  void BatchSetUp();
  void BatchSubmit();
  void BatchGetStatus();
  void BatchCancel();
  void BatchDestroy();
  void DrainAll();
  CUfileBatchHandle_t PickBatch(BatchSlot **slot);
  void CheckEvent(BatchSlot &b, const CUfileIOEvents_t &ev);

  void Opened() {  // an implicit open, if closed: one use
    if (!m_.open) m_.uses = 1;
    m_.open = true;
  }
  void ExpectStatus(const char *call, CUfileError_t got, int want);

  Model &m_;
  ByteReader &r_;
};

std::string Describe(const Io &io);

}  // namespace ufile::fuzz
