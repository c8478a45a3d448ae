#pragma once
// Which CUDA device a command runs on: every command that uses a GPU takes `--device N` or
// `--device all`, and without it runs on CUDA's current device (device 0 of those visible).
// Indices are CUDA's, counted among the devices that CUDA_VISIBLE_DEVICES leaves visible, in the
// order `klab info` lists them; klab never reads or changes CUDA_VISIBLE_DEVICES itself.
//
// Everything below the option works on the current device (cudaGetDevice): plans, the strip
// pipeline, the tuner's GPU identity, klab-bench's session. So choosing the device is one call,
// use_device(), before any other CUDA work of the thread. The current device is a per-thread
// setting of the CUDA runtime: a thread of its own (klab apply's workers) calls use_device() too.
#include <string>
#include <vector>

#include "harness/device_info.hpp"

namespace klab {

struct DeviceRequest {
    bool given = false;  // false: no --device, the current device
    bool all = false;    // --device all
    int index = 0;       // --device N (given && !all)
    bool all_allowed = true;  // false for a command of one device: its messages do not offer "all"
};

// "N" (a device index, 0 or more) or "all"; throws klab::Error naming the text and what is allowed
// ("all" only where `all_allowed`: a command of one device refuses it in select_one_device).
DeviceRequest parse_device_request(const std::string& text, bool all_allowed = true);

// The devices a request names among `query`'s: all of them for "all" or no --device (then the
// caller takes the current one), else the one of index N. Throws klab::Error when there is none,
// naming the devices there are and, when set, `visible_devices` (the CUDA_VISIBLE_DEVICES value,
// nullptr when unset), which decides what CUDA shows.
std::vector<DeviceInfo> requested_devices(const DeviceRequest& request, const DeviceQuery& query,
                                          const char* visible_devices);

// Makes device `index` the calling thread's current device (cudaSetDevice).
void use_device(int index);

// The current device's entry of `query` (which must list devices).
const DeviceInfo& current_device(const DeviceQuery& query);

// A one-device command (`command` names it in errors): the requested device made current, or the
// current one without --device; `--device all` is refused. Throws klab::Error without a device.
DeviceInfo select_one_device(const DeviceRequest& request, const std::string& command);

}  // namespace klab
