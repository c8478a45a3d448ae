// klab._klab: the binding under the Python package klab (python/klab/). Thin on purpose: the
// Python side (klab/_arrays.py) reads each array's protocol (NumPy, DLPack, __cuda_array_interface__),
// checks its dtype, dimensions and strides and allocates outputs; this module turns the checked
// description into klab's image views and calls the library (klab/klab.hpp), which checks again
// (device memory, shapes, overlap) before anything runs. DLPack capsules are read with nanobind.
//
// Errors: klab::VerificationFailed becomes klab.VerificationError (a RuntimeError), CUDA errors
// RuntimeError, a file system's error (klab::FileSystemError: a file not found, a directory not
// writable) the OSError subclass of its errno, every other klab::Error (bad input: a filter spec, a
// border, a variant, a buffer, a file that is not an image) ValueError. The GIL is released while
// klab works.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "api/interop.hpp"
#include "harness/device_info.hpp"
#include "harness/error.hpp"
#include "harness/filter_spec.hpp"
#include "harness/io/image_io.hpp"
#include "klab/klab.hpp"

namespace nb = nanobind;

namespace {

// One image as the Python side describes it: (address, width, height, channels, planar, pitch in
// bytes, element bytes). Planar is SoA (CHW): planes height * pitch apart.
struct ImageArg {
    std::uintptr_t address = 0;
    klab::ImageShape shape;
    std::size_t pitch = 0;
    int element_bytes = 1;

    template <class T>
    klab::ImageView<T> view() const {
        return {reinterpret_cast<T*>(address), shape, pitch};
    }
};

using ImageTuple = std::tuple<std::uintptr_t, int, int, int, bool, std::size_t, int>;

ImageArg image_arg(const ImageTuple& t) {
    const auto& [address, width, height, channels, planar, pitch, element_bytes] = t;
    return {address, {width, height, channels, planar ? klab::Layout::soa : klab::Layout::aos}, pitch, element_bytes};
}

// Host pixels between a caller's view (any pitch) and klab's owning images.
template <class T>
void copy_rows(klab::ImageView<const T> from, klab::ImageView<T> to) {
    const std::size_t row_bytes = static_cast<std::size_t>(from.shape.row_elements()) * sizeof(T);
    for (int r = 0; r < from.shape.rows(); ++r) {
        // Stored rows in order: for SoA, plane by plane (row(y, c) of the stacked planes).
        const int y = from.shape.layout == klab::Layout::aos ? r : r % from.shape.height;
        const int c = from.shape.layout == klab::Layout::aos ? 0 : r / from.shape.height;
        std::memcpy(to.row(y, c), from.row(y, c), row_bytes);
    }
}

klab::ImageU8 host_copy(const ImageArg& image) {
    klab::ImageU8 copy(image.shape);
    copy_rows(image.view<const std::uint8_t>(), copy.view());
    return copy;
}

template <class T>
void store(const klab::HostImage<T>& result, const ImageArg& output) {
    if (result.shape() != output.shape || static_cast<int>(sizeof(T)) != output.element_bytes) {
        throw klab::Error("a " + klab::to_string(result.shape()) + " result for a " + klab::to_string(output.shape) + " output of " +
                              std::to_string(output.element_bytes) + "-byte elements",
                          "an output of the result's shape and element type (klab/_arrays.py allocates one)");
    }
    copy_rows(result.view(), output.view<T>());
}

nb::dict report_dict(const klab::FilterReport& report) {
    nb::dict d;
    d["variant"] = report.variant;
    d["shape"] = report.shape;
    d["notes"] = report.notes;
    d["verification"] = report.verification;
    return d;
}

// A host image's summed-area table of T sums, on the GPU or the CPU reference, into `out`.
template <class T>
klab::FilterReport host_integral(const klab::ImageU8& input, const ImageArg& out, bool on_gpu, const klab::FilterOptions& options) {
    klab::HostImage<T> sums;
    klab::FilterReport report;
    if (on_gpu) {
        report = klab::integral(input, sums, options);
    } else {
        sums = klab::integral_on_cpu<T>(input, options);
    }
    store(sums, out);
    return report;
}

// Where a call runs: "cpu" (the reference on host arrays), "gpu-host" (host arrays, the GPU in
// between), "gpu" (device arrays, in place).
klab::FilterReport run(const ImageArg& in, const ImageArg& out, const std::string& filter, const std::string& where,
                       const klab::FilterOptions& options) {
    const bool integral = klab::parse_filter_spec(filter).operation == klab::Operation::integral;
    if (where == "gpu") {
        const auto input = in.view<const std::uint8_t>();
        if (!integral) return klab::filter(input, out.view<std::uint8_t>(), filter, options);
        if (out.element_bytes == 4) return klab::integral(input, out.view<std::uint32_t>(), options);
        return klab::integral(input, out.view<std::uint64_t>(), options);
    }
    const klab::ImageU8 input = host_copy(in);
    const bool on_gpu = where == "gpu-host";
    if (integral) {
        return out.element_bytes == 4 ? host_integral<std::uint32_t>(input, out, on_gpu, options)
                                      : host_integral<std::uint64_t>(input, out, on_gpu, options);
    }
    klab::ImageU8 result;
    klab::FilterReport report;
    if (on_gpu) {
        report = klab::filter(input, result, filter, options);
    } else {
        result = klab::filter_on_cpu(input, filter, options);
    }
    store(result, out);
    return report;
}

klab::FilterOptions options_of(const std::string& border, const std::string& variant, std::uintptr_t stream, int device,
                               const std::string& results, bool verify, int threads) {
    klab::FilterOptions o;
    o.border = border;
    o.variant = variant;
    o.stream = reinterpret_cast<cudaStream_t>(stream);
    o.device = device;
    o.results = results;
    o.verify = verify;
    o.threads = threads;
    return o;
}

// A DLPack capsule (or any array nanobind reads) described for klab/_arrays.py:
// (address, shape, strides in bytes, dtype name, DLPack device type, device id).
nb::tuple array_info(nb::handle array) {
    nb::ndarray<nb::ro> a;
    if (!nb::try_cast(array, a, /*convert=*/false)) {
        throw nb::type_error("not an array nanobind can read through DLPack or the buffer protocol");
    }
    const nb::dlpack::dtype dtype = a.dtype();
    std::string name;
    switch (static_cast<nb::dlpack::dtype_code>(dtype.code)) {
        case nb::dlpack::dtype_code::UInt: name = "uint"; break;
        case nb::dlpack::dtype_code::Int: name = "int"; break;
        case nb::dlpack::dtype_code::Float: name = "float"; break;
        case nb::dlpack::dtype_code::Bool: name = "bool"; break;
        default: name = "code" + std::to_string(dtype.code) + "_"; break;
    }
    name += std::to_string(dtype.bits);
    if (dtype.lanes != 1) name += "x" + std::to_string(dtype.lanes);
    nb::list shape;
    nb::list strides;
    for (std::size_t i = 0; i < a.ndim(); ++i) {
        shape.append(a.shape(i));
        strides.append(a.stride(i) * static_cast<std::int64_t>(a.itemsize()));
    }
    return nb::make_tuple(reinterpret_cast<std::uintptr_t>(a.data()), nb::tuple(shape), nb::tuple(strides), name, a.device_type(),
                          a.device_id());
}

// A path as Python's os.fsencode gives it: the file system's bytes, which need not be UTF-8.
std::string path_of(const nb::bytes& path) { return std::string(path.c_str(), path.size()); }

// An image file as a NumPy array: (H, W) for gray, (H, W, C) otherwise; it owns klab's image.
nb::object read_image(const nb::bytes& path) {
    auto image = std::make_unique<klab::ImageU8>(klab::io::read_image(path_of(path)));
    const std::size_t height = static_cast<std::size_t>(image->height());
    const std::size_t width = static_cast<std::size_t>(image->width());
    const std::size_t channels = static_cast<std::size_t>(image->channels());
    const std::size_t shape[3] = {height, width, channels};
    const std::int64_t strides[3] = {static_cast<std::int64_t>(image->pitch_bytes()), static_cast<std::int64_t>(channels), 1};
    std::uint8_t* data = image->data();
    nb::capsule owner(image.release(), [](void* p) noexcept { delete static_cast<klab::ImageU8*>(p); });
    return nb::cast(nb::ndarray<nb::numpy, std::uint8_t>(data, channels == 1 ? 2 : 3, shape, owner, strides));
}

nb::list devices() {
    nb::list list;
    for (const klab::DeviceInfo& d : klab::query_devices().devices) {
        nb::dict info;
        info["index"] = d.index;
        info["name"] = d.name;
        info["compute_capability"] = nb::make_tuple(d.cc_major, d.cc_minor);
        info["sm_count"] = d.sm_count;
        info["memory_bytes"] = d.global_memory_bytes;
        info["driver"] = klab::cuda_version_string(d.driver_version);
        info["runtime"] = klab::cuda_version_string(d.runtime_version);
        list.append(info);
    }
    return list;
}

}  // namespace

NB_MODULE(_klab, m) {
    m.doc() = "klab's library (libklab) for the klab package; use the functions of `klab`, not these.";
    m.attr("__version__") = KLAB_VERSION;

    // Created once and never released (a static Python object must not outlive the interpreter).
    static PyObject* const verification_error = PyErr_NewExceptionWithDoc(
        "klab.VerificationError", "The GPU's result differs from the CPU reference (verify=True).", PyExc_RuntimeError, nullptr);
    m.attr("VerificationError") = nb::borrow(verification_error);
    nb::register_exception_translator([](const std::exception_ptr& p, void*) {
        try {
            std::rethrow_exception(p);
        } catch (const klab::VerificationFailed& e) {
            PyErr_SetString(verification_error, e.what());
        } catch (const klab::FileSystemError& e) {
            // OSError(errno, text) is built as the subclass its errno names (FileNotFoundError,
            // PermissionError, IsADirectoryError, ...), with e.errno set.
            // The message may quote a path that is not UTF-8: its bytes are kept as \xNN escapes.
            const std::string text = e.what();
            PyObject* const arguments = Py_BuildValue(
                "(iN)", e.error_number(), PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "backslashreplace"));
            if (arguments != nullptr) {
                PyErr_SetObject(PyExc_OSError, arguments);
                Py_DECREF(arguments);
            }
        } catch (const klab::Error& e) {
            // CUDA failures (harness/cuda_check.cpp) are the machine's, not the caller's input.
            const bool cuda = std::strncmp(e.what(), "CUDA error", 10) == 0;
            PyErr_SetString(cuda ? PyExc_RuntimeError : PyExc_ValueError, e.what());
        }
    });

    m.def("variants", [] {
        nb::list list;
        for (const klab::VariantInfo& v : klab::variants()) {
            nb::dict d;
            d["name"] = v.name;
            d["op"] = v.op;
            d["technique"] = v.technique;
            list.append(d);
        }
        return list;
    });
    m.def("devices", &devices);
    m.def("gpu_available", &klab::gpu_available);
    m.def("filter_op", [](const std::string& filter) { return std::string(klab::to_string(klab::parse_filter_spec(filter).operation)); });
    m.def("integral_needs_u64", &klab::integral_needs_u64);
    m.def("array_info", &array_info);
    // A convolution spec's mask, (height, width, row-major coefficients), for klab.peers.
    m.def("mask", [](const std::string& filter) {
        const klab::FilterSpec spec = klab::parse_filter_spec(filter);
        if (!spec.mask) throw klab::Error("filter \"" + filter + "\" has no mask", "a convolution: box:K, gaussian:K, sharpen, ...");
        return nb::make_tuple(spec.mask->height(), spec.mask->width(), spec.mask->coefficients());
    });
    m.def("read_image", &read_image);
    m.def("default_jpeg_quality", [] { return klab::io::WriteOptions{}.jpeg_quality; });
    m.def("write_image", [](const nb::bytes& path, const ImageTuple& image, int jpeg_quality) {
        klab::io::write_image(path_of(path), host_copy(image_arg(image)), klab::io::WriteOptions{jpeg_quality});
    });
    m.def("wait_for", [](std::uintptr_t waiting, std::uintptr_t producer) {
        klab::interop::wait_for(reinterpret_cast<cudaStream_t>(waiting), reinterpret_cast<cudaStream_t>(producer));
    });
    m.def("run", [](const ImageTuple& input, const ImageTuple& output, const std::string& filter, const std::string& where,
                    const std::string& border, const std::string& variant, std::uintptr_t stream, int device,
                    const nb::bytes& results, bool verify, int threads) {
        const ImageArg in = image_arg(input);
        const ImageArg out = image_arg(output);
        const klab::FilterOptions options = options_of(border, variant, stream, device, path_of(results), verify, threads);
        klab::FilterReport report;
        {
            const nb::gil_scoped_release unlocked;
            report = run(in, out, filter, where, options);
        }
        return report_dict(report);
    });
    m.def("choose", [](const ImageTuple& input, const std::string& filter, const std::string& border, const std::string& variant,
                       int device, const nb::bytes& results) {
        const klab::FilterOptions options = options_of(border, variant, 0, device, path_of(results), false, 0);
        klab::FilterReport report;
        {
            const nb::gil_scoped_release unlocked;
            report = klab::choose_variant(image_arg(input).shape, filter, options);
        }
        return report_dict(report);
    });
}
