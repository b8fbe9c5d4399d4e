"""CRC32C (Castagnoli), the checksum tinygpt's safetensors files keep of each tensor and of their metadata."""


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c_bytewise(data, crc=0xFFFFFFFF):
    """The CRC32C register after `data`, a byte at a time from register `crc` (no final inversion)."""
    table = _CRC_TABLE
    for b in memoryview(data).cast("B"):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def _zeros_operator(n):
    """The register's map over n zero bytes, linear over GF(2): the images of its 32 bits."""
    def apply(op, v):
        out, bit = 0, 0
        while v:
            if v & 1:
                out ^= op[bit]
            v >>= 1
            bit += 1
        return out

    result = [1 << b for b in range(32)]          # identity
    power = [crc32c_bytewise(b"\0", 1 << b) for b in range(32)]  # one zero byte
    while n:
        if n & 1:
            result = [apply(power, r) for r in result]
        power = [apply(power, p) for p in power]
        n >>= 1
    return result, apply


def crc32c(data):
    """CRC32C (Castagnoli, reflected 0x82F63B78), as tinygpt writes "crc32c.NAME": 8 hex digits of this.
    Large inputs are cut into chunks whose registers numpy advances side by side, then joined: the
    register after chunk A then chunk B is (A's register carried over len(B) zero bytes) xor (B's register
    from zero), as zlib's crc32_combine does."""
    data = memoryview(data).cast("B")
    chunks = 1024
    if len(data) < 64 * chunks:
        return crc32c_bytewise(data) ^ 0xFFFFFFFF
    import numpy as np
    table = np.array(_CRC_TABLE, dtype=np.uint32)
    L = len(data) // chunks
    body = np.frombuffer(data[:L * chunks], dtype=np.uint8).reshape(chunks, L)
    regs = np.zeros(chunks, dtype=np.uint32)
    regs[0] = 0xFFFFFFFF
    for j in range(L):
        regs = table[(regs ^ body[:, j]) & 0xFF] ^ (regs >> 8)
    shift, apply = _zeros_operator(L)
    crc = 0
    for r in regs.tolist():
        crc = apply(shift, crc) ^ r
    return crc32c_bytewise(data[L * chunks:], crc) ^ 0xFFFFFFFF
