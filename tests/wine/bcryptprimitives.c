/* bcryptprimitives.dll for Wine 8, which has none. Rust's standard library (1.78 and later)
 * imports ProcessPrng from it for every random number (HashMap's keys among them); this
 * forwards it to advapi32's SystemFunction036 (RtlGenRandom), which Wine has.
 *
 *   x86_64-w64-mingw32-gcc -shared -s -o bcryptprimitives.dll bcryptprimitives.c -ladvapi32
 *
 * The DLL goes into the Wine prefix's system32 (tests/windows_wine.rs does it). */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

/* Fills the whole buffer; TRUE when it did, as Windows' own always does. */
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG part = length > 0x80000000u ? 0x80000000u : (ULONG)length;
        if (!SystemFunction036(data, part))
            return FALSE;
        data += part;
        length -= part;
    }
    return TRUE;
}
