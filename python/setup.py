"""Builds braid_torch against the torch already installed: `pip install --no-build-isolation ./python`.

libbraid comes from the repository: the static library of an existing build (BRAID_BUILD_DIR, else ../build) or,
when there is none, a fresh CMake build of it; the extension links it whole, so the package needs no libbraid.so.
A torch built with libstdc++'s old ABI (PyPI's wheels before 2.7) gets a libbraid of that ABI, built in
BRAID_BUILD_DIR-cxx11abi0. BRAID_TORCH_CMAKE_ARGS adds CMake arguments to such a fresh build.
"""
import os
import subprocess

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def cache_value(cache, name):
    for line in cache.splitlines():
        if line.startswith(name + ":"):
            return line.split("=", 1)[1]
    return ""


def torch_uses_cxx11_abi():
    import torch

    return bool(torch._C._GLIBCXX_USE_CXX11_ABI)


def braid_library():
    build = os.environ.get("BRAID_BUILD_DIR") or os.path.join(ROOT, "build")
    if not os.path.isabs(build):
        build = os.path.join(ROOT, build)
    configure = ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo"]
    if not torch_uses_cxx11_abi():
        # torch's wheels before 2.7 use libstdc++'s old ABI (std::string and friends laid out differently), and so is
        # this extension compiled: libbraid, whose API passes std::string, is built alike in a directory of its own.
        build += "-cxx11abi0"
        flag = "-D_GLIBCXX_USE_CXX11_ABI=0"
        configure = ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DBRAID_BUILD_TESTS=OFF",
                     "-DBRAID_BUILD_TOOLS=OFF", f"-DCMAKE_CXX_FLAGS={flag}", f"-DCMAKE_CUDA_FLAGS=-Xcompiler={flag}"]
    configure += os.environ.get("BRAID_TORCH_CMAKE_ARGS", "").split()  # e.g. -DBRAID_WITH_CUDA=OFF
    lib = os.path.join(build, "src", "libbraid.a")
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        subprocess.check_call(configure)
    if not os.path.exists(lib) or build.endswith("-cxx11abi0"):  # the ABI build is this package's own: keep it fresh
        subprocess.check_call(["cmake", "--build", build, "--target", "braid_static", "-j", str(os.cpu_count() or 2)])
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        cache = f.read()
    objects = [lib]
    if cache_value(cache, "BRAID_WITH_CUDA") == "ON":
        cudart = cache_value(cache, "CUDA_cudart_static_LIBRARY")
        if cudart:
            objects.append(cudart)
    return objects


def cuda_stream_access():
    """torch before 2.7 has no c10::Stream::native_handle(): there the backend reaches CUDA streams through
    c10/cuda/CUDAStream.h, which needs the CUDA toolkit's headers and libc10_cuda (braid_backend.cpp)."""
    import torch
    from torch.utils.cpp_extension import CUDA_HOME

    major, minor = (int(part) for part in torch.__version__.split("+")[0].split(".")[:2])
    if (major, minor) >= (2, 7) or not torch.version.cuda or not CUDA_HOME:
        return {}
    include = os.path.join(CUDA_HOME, "include")
    if not os.path.exists(os.path.join(include, "cuda_runtime_api.h")):
        return {}
    return {"define_macros": [("BRAID_TORCH_CUDA_STREAM_HEADER", "1")], "include_dirs": [include],
            "libraries": ["c10_cuda"]}


BRAID_OBJECTS = braid_library()
STREAMS = cuda_stream_access()

setup(
    name="braid_torch",
    version="0.1.0",
    description="braid's torch.distributed backend for CPU and CUDA tensors",
    packages=["braid_torch"],
    ext_modules=[
        CppExtension(
            name="braid_torch._C",
            sources=[
                os.path.join("braid_torch", "csrc", f)
                for f in ("braid_backend.cpp", "braid_collectives.cpp", "module.cpp")
            ],
            include_dirs=[os.path.join(ROOT, "include")] + STREAMS.get("include_dirs", []),
            define_macros=STREAMS.get("define_macros", []),
            extra_objects=BRAID_OBJECTS,
            # A new libbraid or header rebuilds the extension.
            depends=BRAID_OBJECTS
            + [
                os.path.join("braid_torch", "csrc", f)
                for f in ("braid_backend.hpp", "braid_work.hpp", "tensor_buffers.hpp", "torch_store.hpp")
            ],
            libraries=["crypto", "hwloc", "dl", "rt"] + STREAMS.get("libraries", []),
            # Everything taken from static archives stays private to the module. Some toolchains (the GPU
            # machine's /opt/gcc) link their newer libstdc++ statically: exported, its symbols were bound to the
            # libstdc++.so torch had already loaded, and the module's iostreams called facets of the other
            # library's layout (a crash formatting the first number in Communicator::create).
            extra_link_args=["-Wl,--exclude-libs,ALL"],
            extra_compile_args=["-std=c++20", "-O2"],
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
