/* SPDX-License-Identifier: Apache-2.0 */
/* A stand-in for NVIDIA's libcufile.so.0 as ufile's tools recognise it
 * (SONAME libcufile.so.0, the cuFile entry points, the kernel driver's name);
 * never called. */
const char ufile_test_fake_driver[] = "/dev/nvidia-fs%d";
__attribute__((visibility("default"))) int cuFileDriverOpen(void) { return 0; }
__attribute__((visibility("default"))) int cuFileHandleRegister(void) { return 0; }
