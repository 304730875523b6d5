// Processes for labs that run as several ranks (c10d): start the ranks on this machine, watch and reap
// them, the TCP store they meet at, and the values they hand back through it.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <c10/util/intrusive_ptr.h>

namespace c10d {
class Store;
}

namespace lab {

// The environment variable's value, "" when unset.
std::string env(const char* name);

// A c10d TCPStore at host:port (port 0 with server: a free port), with amp::kCollectiveTimeout.
c10::intrusive_ptr<c10d::Store> connect_store(const std::string& host, int port, bool server);

// The port a server store from connect_store bound.
int store_port(c10d::Store& store);

// Starts `world` ranks as fresh processes of this very executable (/proc/self/exe), each with
// `vars_of(rank)` ("NAME=value") added to (or replacing in) this process's environment, and waits for
// them. A rank that fails, is killed or outlives `deadline` stops the others and throws
// std::runtime_error naming it; no rank outlives the call or this process.
void spawn_ranks(int world, const std::function<std::vector<std::string>(int rank)>& vars_of,
                 std::chrono::seconds deadline);

// Float vectors and byte strings through the store, under `key`; get waits for the key.
void store_set(c10d::Store& store, const std::string& key, const void* data, size_t bytes);
std::vector<float> store_get_floats(c10d::Store& store, const std::string& key);
std::string store_get_string(c10d::Store& store, const std::string& key);

// Every rank counts itself in under `key`; rank 0 then waits until all `world` have, so a store it hosts
// outlives the other ranks' reads.
void store_barrier(c10d::Store& store, const std::string& key, int rank, int world);

}  // namespace lab
