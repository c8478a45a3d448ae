#pragma once
// DeviceImage: the device twin of HostImage. Pitched device memory from cudaMallocPitch (never
// managed memory), owned by RAII; uploads and downloads keep the shape and honour both pitches.
#include <cstddef>
#include <string>
#include <utility>

#include <cuda_runtime_api.h>

#include "harness/cuda_check.hpp"
#include "harness/error.hpp"
#include "harness/image.hpp"

namespace klab {

template <class T>
class DeviceImage {
public:
    DeviceImage() = default;
    // pitch_bytes == 0: cudaMallocPitch picks an aligned pitch. Otherwise exactly that pitch (at
    // least the bytes of a row, a multiple of sizeof(T)), e.g. to test tight or odd pitches.
    explicit DeviceImage(ImageShape shape, std::size_t pitch_bytes = 0) : shape_(shape) {
        validate_shape(shape);
        void* memory = nullptr;
        const std::size_t rows = static_cast<std::size_t>(shape.rows());
        if (pitch_bytes == 0) {
            KLAB_CUDA_CHECK(cudaMallocPitch(&memory, &pitch_bytes_, row_bytes(), rows));
        } else {
            if (pitch_bytes < row_bytes() || pitch_bytes % sizeof(T) != 0) {
                throw Error("device image pitch of " + std::to_string(pitch_bytes) + " bytes for " + to_string(shape),
                            "at least the " + std::to_string(row_bytes()) + " bytes of a row, a multiple of " +
                                std::to_string(sizeof(T)));
            }
            KLAB_CUDA_CHECK(cudaMalloc(&memory, pitch_bytes * rows));
            pitch_bytes_ = pitch_bytes;
        }
        data_ = static_cast<T*>(memory);
    }
    // Allocates a twin of `host` and uploads it.
    explicit DeviceImage(const HostImage<T>& host, cudaStream_t stream = nullptr) : DeviceImage(host.shape()) {
        upload(host, stream);
    }
    ~DeviceImage() { release(); }

    DeviceImage(const DeviceImage&) = delete;
    DeviceImage& operator=(const DeviceImage&) = delete;
    DeviceImage(DeviceImage&& other) noexcept { swap(other); }
    DeviceImage& operator=(DeviceImage&& other) noexcept {
        if (this != &other) {
            release();
            swap(other);
        }
        return *this;
    }

    const ImageShape& shape() const { return shape_; }
    std::size_t pitch_bytes() const { return pitch_bytes_; }
    // Bytes allocated: rows() * pitch_bytes().
    std::size_t capacity_bytes() const { return static_cast<std::size_t>(shape_.rows()) * pitch_bytes_; }
    ImageView<T> view() { return {data_, shape_, pitch_bytes_}; }
    ImageView<const T> view() const { return {data_, shape_, pitch_bytes_}; }

    // Copies `host` into this image (same shape required). Asynchronous with respect to the host
    // only when `host` lives in pinned memory; the caller synchronises `stream` before reuse.
    void upload(const HostImage<T>& host, cudaStream_t stream = nullptr) {
        require_same_shape(host.shape(), "upload");
        KLAB_CUDA_CHECK(cudaMemcpy2DAsync(data_, pitch_bytes_, host.data(), host.pitch_bytes(), row_bytes(),
                                          static_cast<std::size_t>(shape_.rows()), cudaMemcpyHostToDevice, stream));
    }
    // Copies this image into `host` (same shape required) and waits for the copy.
    void download(HostImage<T>& host, cudaStream_t stream = nullptr) const {
        download_async(host, stream);
        KLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    }
    // The same without waiting: `host` must be pinned for the copy to be asynchronous, and must
    // not be read before `stream` is synchronised.
    void download_async(HostImage<T>& host, cudaStream_t stream) const {
        require_same_shape(host.shape(), "download");
        KLAB_CUDA_CHECK(cudaMemcpy2DAsync(host.data(), host.pitch_bytes(), data_, pitch_bytes_, row_bytes(),
                                          static_cast<std::size_t>(shape_.rows()), cudaMemcpyDeviceToHost, stream));
    }
    HostImage<T> download(cudaStream_t stream = nullptr) const {
        HostImage<T> host(shape_);
        download(host, stream);
        return host;
    }

private:
    std::size_t row_bytes() const { return static_cast<std::size_t>(shape_.row_elements()) * sizeof(T); }
    void require_same_shape(const ImageShape& other, const char* what) const {
        if (other != shape_) {
            throw Error(std::string(what) + " between a " + to_string(other) + " host image and a " +
                            to_string(shape_) + " device image",
                        "images of the same width, height, channels and layout");
        }
    }
    void release() noexcept {
        if (data_ != nullptr) KLAB_CUDA_CHECK_NOTHROW(cudaFree(data_));
        data_ = nullptr;
    }
    void swap(DeviceImage& other) noexcept {
        std::swap(data_, other.data_);
        std::swap(shape_, other.shape_);
        std::swap(pitch_bytes_, other.pitch_bytes_);
    }

    T* data_ = nullptr;
    ImageShape shape_;
    std::size_t pitch_bytes_ = 0;
};

}  // namespace klab
