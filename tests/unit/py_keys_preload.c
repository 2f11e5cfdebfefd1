/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * py_keys_preload.c — an LD_PRELOAD library for test_python.c: takes 40
 * pthread keys before the interpreter starts, so that CPython's thread-state
 * key is >= 32 and lives in glibc's second-level key blocks (struct
 * pthread's specific[]), the path of the walk that keys 0 and 1 never take.
 */
#include <pthread.h>

__attribute__((constructor)) static void take_keys(void)
{
	pthread_key_t key;

	for (int i = 0; i < 40; i++)
		pthread_key_create(&key, NULL);
}
