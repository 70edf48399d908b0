"""Builds braid_torch against the torch already installed: `pip install --no-build-isolation ./python`.

libbraid comes from the repository: the static library of an existing build (BRAID_BUILD_DIR, else ../build) or,
when there is none, a fresh CMake build of it; the extension links it whole, so the package needs no libbraid.so.
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


def braid_library():
    build = os.environ.get("BRAID_BUILD_DIR") or os.path.join(ROOT, "build")
    if not os.path.isabs(build):
        build = os.path.join(ROOT, build)
    lib = os.path.join(build, "src", "libbraid.a")
    if not os.path.exists(lib):
        subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo"])
        subprocess.check_call(["cmake", "--build", build, "--target", "braid_static", "-j", str(os.cpu_count() or 2)])
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        cache = f.read()
    objects = [lib]
    if cache_value(cache, "BRAID_WITH_CUDA") == "ON":
        cudart = cache_value(cache, "CUDA_cudart_static_LIBRARY")
        if cudart:
            objects.append(cudart)
    return objects


BRAID_OBJECTS = braid_library()

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
            include_dirs=[os.path.join(ROOT, "include")],
            extra_objects=BRAID_OBJECTS,
            # A new libbraid or header rebuilds the extension.
            depends=BRAID_OBJECTS
            + [
                os.path.join("braid_torch", "csrc", f)
                for f in ("braid_backend.hpp", "braid_work.hpp", "tensor_buffers.hpp", "torch_store.hpp")
            ],
            libraries=["crypto", "dl", "rt"],
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
