// The WebAssembly build's stand-in for <linux/fs.h> (cmake/wasm/wasm.cmake): the inode flags that
// examples/support/cli.cpp asks for with ioctl(FS_IOC_GETFLAGS). Emscripten's ioctl refuses the request,
// so the flags read as "not asked", as on a file system without them. Values as in Linux's header.
#pragma once

#define FS_IOC_GETFLAGS 0x80086601
#define FS_IMMUTABLE_FL 0x00000010
#define FS_APPEND_FL 0x00000020
