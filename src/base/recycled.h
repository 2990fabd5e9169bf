// Memory for objects made once per operation (tasks, requests), kept for the next one instead of
// going back to the heap: after warm-up a collective's post allocates nothing (tests/mp/mp_no_alloc.cc).
//
// A free list per type holds the blocks of that type's objects that are gone; it grows to the most that were
// ever alive at once and is never returned, so that a stale pointer to a recycled object still points at
// memory of that type (psdp_request handles rely on it to tell a freed handle from a live one). Thread-safe.
//
//   class HostTask final : public CollTask, public Recycled<HostTask> { ... };   // new/delete recycle
//   Recycled<HostTask>::prime(64);                                               // the working size up front
//   std::allocate_shared<Request>(RecyclingAllocator<Request>(), ...);           // shared_ptr's block too
#pragma once

#include <cstddef>
#include <mutex>
#include <new>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
// A block on a free list is poisoned, so that AddressSanitizer still reports a use after delete.
#define PSDP_POISON_BLOCK(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define PSDP_UNPOISON_BLOCK(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define PSDP_POISON_BLOCK(p, n) ((void)(p), (void)(n))
#define PSDP_UNPOISON_BLOCK(p, n) ((void)(p), (void)(n))
#endif

namespace psdp {

// The blocks of one size and alignment, used by one type only (the Tag). The list is kept outside the blocks,
// so that a free block can be poisoned whole.
template <typename Tag, size_t Size, size_t Align>
class FreeList {
 public:
  static void* take() {
    List& list = instance();
    std::lock_guard lock(list.mutex);
    if (!list.blocks.empty()) {
      void* block = list.blocks.back();
      list.blocks.pop_back();
      PSDP_UNPOISON_BLOCK(block, Size);
      return block;
    }
    // A new peak: room on the list for every block there is, so that giving them back allocates nothing.
    list.blocks.reserve(++list.made);
    return ::operator new (Size, std::align_val_t{Align});
  }
  // Makes sure at least n blocks are free now, so that the next n takes allocate nothing.
  static void prime(size_t n) {
    List& list = instance();
    std::lock_guard lock(list.mutex);
    if (list.blocks.size() >= n) return;
    list.made += n - list.blocks.size();
    list.blocks.reserve(list.made);
    while (list.blocks.size() < n) {
      void* block = ::operator new (Size, std::align_val_t{Align});
      PSDP_POISON_BLOCK(block, Size);
      list.blocks.push_back(block);
    }
  }
  static void give(void* block) {
    List& list = instance();
    PSDP_POISON_BLOCK(block, Size);
    std::lock_guard lock(list.mutex);
    list.blocks.push_back(block);  // within the capacity reserved for every block made
  }

 private:
  struct List {
    std::mutex mutex;
    std::vector<void*> blocks;  // the free ones
    size_t made = 0;            // blocks ever made
  };
  // Never destroyed: objects may still be deleted during static destruction.
  static List& instance() {
    static List* list = new List();
    return *list;
  }
};

// A base that gives T class-specific operator new and delete drawing on T's free list. A class derived from
// T (a larger object) gets ordinary heap memory.
template <typename T>
class Recycled {
 public:
  static void* operator new(size_t bytes) {
    if (bytes != sizeof(T)) return ::operator new(bytes);
    return FreeList<T, sizeof(T), alignof(T)>::take();
  }
  // Makes sure the next n objects of T made take recycled memory (a pool's working size, made up front).
  static void prime(size_t n) { FreeList<T, sizeof(T), alignof(T)>::prime(n); }
  static void operator delete(void* block, size_t bytes) {
    if (block == nullptr) return;
    if (bytes != sizeof(T)) {
      ::operator delete(block);
      return;
    }
    FreeList<T, sizeof(T), alignof(T)>::give(block);
  }
};

// A standard allocator for single objects drawing on per-type free lists (for std::allocate_shared, whose
// control block and object are one allocation of an internal type). Arrays go to the heap.
template <typename T>
class RecyclingAllocator {
 public:
  using value_type = T;
  RecyclingAllocator() = default;
  template <typename U>
  RecyclingAllocator(const RecyclingAllocator<U>& /*other*/) {}  // NOLINT(google-explicit-constructor)

  T* allocate(size_t n) {
    if (n != 1) return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{alignof(T)}));
    return static_cast<T*>(FreeList<T, sizeof(T), alignof(T)>::take());
  }
  void deallocate(T* block, size_t n) {
    if (n != 1) {
      ::operator delete (block, std::align_val_t{alignof(T)});
      return;
    }
    FreeList<T, sizeof(T), alignof(T)>::give(block);
  }
  template <typename U>
  bool operator==(const RecyclingAllocator<U>& /*other*/) const {
    return true;
  }
};

}  // namespace psdp
