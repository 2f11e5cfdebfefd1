/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_overlay.c — reading overlay mounts (symbolize/overlay.c): mountinfo
 * lines with optional fields and octal escapes, an overlay's layers in the
 * overlay's own order (upper first, then lower ones; escaped colons, data-only
 * layers after "::", the new lowerdir+= options), malformed lines refused,
 * and a file that is on no overlay left as it is. The layers followed on a
 * real overlay are the e2e tests' (tests/e2e/test_containers.py).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "symbolize/overlay.h"

static struct gp_mount m;
static char layers[8][4096];

static void parses_a_container_root(void **state)
{
	const char *line =
		"84 55 0:42 / / rw,relatime shared:1 master:2 - overlay overlay "
		"rw,lowerdir=/s/l/A:/s/l/B,upperdir=/s/u/diff,workdir=/s/u/work,uuid=on\n";

	(void)state;
	assert_int_equal(gp_mountinfo_parse(line, &m), 0);
	assert_int_equal(m.major, 0);
	assert_int_equal(m.minor, 42);
	assert_string_equal(m.root, "/");
	assert_string_equal(m.point, "/");
	assert_string_equal(m.fstype, "overlay");
	assert_int_equal(gp_overlay_layers(m.super, layers, 8), 3);
	assert_string_equal(layers[0],
			    "/s/u/diff"); /* upper first, whatever the order of options */
	assert_string_equal(layers[1], "/s/l/A");
	assert_string_equal(layers[2], "/s/l/B");
}

static void undoes_escapes(void **state)
{
	/* a space in a mount point (\040), a comma (\054) and an escaped colon in a layer's path */
	const char *line = "90 84 0:50 /sub /mnt/my\\040dir rw - overlay none "
			   "ro,lowerdir=/a\\054b/l\\134:x:/c,xino=off\n";

	(void)state;
	assert_int_equal(gp_mountinfo_parse(line, &m), 0);
	assert_string_equal(m.root, "/sub");
	assert_string_equal(m.point, "/mnt/my dir");
	assert_int_equal(gp_overlay_layers(m.super, layers, 8), 2);
	assert_string_equal(layers[0], "/a,b/l:x");
	assert_string_equal(layers[1], "/c");
}

static void data_only_and_appended_layers(void **state)
{
	(void)state;
	assert_int_equal(gp_overlay_layers("lowerdir=/l1:/l2::/data", layers, 8), 3);
	assert_string_equal(layers[0], "/l1");
	assert_string_equal(layers[1], "/l2");
	assert_string_equal(layers[2], "/data");
	assert_int_equal(
		gp_overlay_layers("lowerdir+=/l1,lowerdir+=/l2,datadir+=/d,upperdir=/u", layers, 8),
		4);
	assert_string_equal(layers[0], "/u");
	assert_string_equal(layers[1], "/l1");
	assert_string_equal(layers[2], "/l2");
	assert_string_equal(layers[3], "/d");
	/* at most max */
	assert_int_equal(gp_overlay_layers("lowerdir=/1:/2:/3", layers, 2), 2);
	assert_int_equal(gp_overlay_layers("rw,relatime", layers, 8), 0);
}

static void refuses_what_is_not_a_line(void **state)
{
	(void)state;
	assert_int_equal(gp_mountinfo_parse("", &m), -EINVAL);
	assert_int_equal(gp_mountinfo_parse("84 55 0:42 / / rw\n", &m), -EINVAL); /* no "-" */
	assert_int_equal(gp_mountinfo_parse("84 55 x / / rw - ext4 /dev/x rw\n", &m), -EINVAL);
	assert_int_equal(gp_mountinfo_parse("84 55 0:42 / / rw - overlay\n", &m),
			 -EINVAL); /* no source */
}

static void a_file_on_no_overlay_is_itself(void **state)
{
	char real[4096] = "";
	struct stat st, before;

	(void)state;
	assert_int_equal(stat("/proc/self/exe", &st), 0);
	before = st;
	/* this test's own executable: on a disk, or in a container (then its layer file, same size) */
	assert_true(gp_overlay_real_file(getpid(), "/proc/self/exe", &st, real, sizeof(real)) >=
			    0 ||
		    st.st_ino == before.st_ino);
	assert_int_equal(st.st_size, before.st_size);
	assert_null(gp_overlay_root_of(-1));
	assert_int_equal(gp_overlay_root_find(NULL, "/x", real, sizeof(real)), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parses_a_container_root),
		cmocka_unit_test(undoes_escapes),
		cmocka_unit_test(data_only_and_appended_layers),
		cmocka_unit_test(refuses_what_is_not_a_line),
		cmocka_unit_test(a_file_on_no_overlay_is_itself),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
