/* SPDX-License-Identifier: MIT */
/*
 * libalign: probing real block devices.  Attaches a file to a free loop
 * device (LOOP_CONFIGURE with LO_FLAGS_AUTOCLEAR, so the kernel detaches it
 * when this process exits, even if it is killed) with 512- and 4096-byte
 * sectors and a DOS partition at LBA 63, then checks libalign's topology
 * against the kernel's own sysfs figures.  Root only; SKIPs otherwise.
 */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <linux/blkpg.h>
#include <linux/loop.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "align.h"
#include "test.h"

#define IMG_SIZE (64ull << 20)
#define PART_START 63u
#define PART_SECTORS 65536u

static char dir[] = "/tmp/align-device-XXXXXX";
static char img[256], node[256];

static long long sysfs_ll(const char *fmt, const char *name, const char *attr)
{
	char p[512], buf[64];
	long long v = -2;
	FILE *f;

	snprintf(p, sizeof(p), fmt, name, attr);
	f = fopen(p, "r");
	if (f && fgets(buf, sizeof(buf), f))
		v = strtoll(buf, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

/* Attach @img with @bs-byte sectors; returns the open loop fd, name in @dev. */
static int attach(unsigned bs, char *dev, size_t len)
{
	struct loop_config cfg;
	int ctl, fd = -1, bfd, n, tries;

	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	bfd = open(img, O_RDWR | O_CLOEXEC);
	if (ctl < 0 || bfd < 0)
		T_SKIP("no /dev/loop-control or image: %s", strerror(errno));
	for (tries = 0; tries < 20; tries++) {
		n = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (n < 0)
			T_SKIP("LOOP_CTL_GET_FREE: %s", strerror(errno));
		snprintf(dev, len, "/dev/loop%d", n);
		fd = open(dev, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(&cfg, 0, sizeof(cfg));
		cfg.fd = (uint32_t)bfd;
		cfg.block_size = bs;
		cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_PARTSCAN;
		if (ioctl(fd, LOOP_CONFIGURE, &cfg) == 0)
			break;
		if (errno != EBUSY)
			T_SKIP("LOOP_CONFIGURE: %s", strerror(errno));
		close(fd);   /* raced with another user of loop devices */
		fd = -1;
	}
	close(bfd);
	close(ctl);
	if (fd < 0)
		T_SKIP("no free loop device");
	return fd;
}

/* Compare libalign's view of @dev with sysfs; @qdir is the queue owner. */
static void check_dev(const char *dev, const char *qname, uint32_t bs,
		      uint64_t size, uint32_t want_off)
{
	struct align_topology t, p;
	const char *q = "/sys/block/%s/queue/%s";
	char desc[200];
	int rc;

	rc = align_topology_from_device(dev, &t);
	T_CHECK(rc == 0, "%s: from_device %d", dev, rc);
	if (rc)
		return;
	align_topology_describe(&t, desc, sizeof(desc));
	fprintf(stderr, "%s: %s\n", dev, desc);
	T_EQ_U64(t.logical, bs, "%s logical", dev);
	T_EQ_U64(t.logical, sysfs_ll(q, qname, "logical_block_size"), "%s", dev);
	T_EQ_U64(t.physical, sysfs_ll(q, qname, "physical_block_size"), "%s", dev);
	T_EQ_U64(t.io_min, sysfs_ll(q, qname, "minimum_io_size"), "%s", dev);
	T_EQ_U64(t.io_opt, sysfs_ll(q, qname, "optimal_io_size"), "%s", dev);
	T_EQ_U64(t.size, size, "%s size", dev);
	T_EQ_U64(t.alignment_offset, want_off, "%s offset", dev);
	T_CHECK(!t.misaligned && t.source == ALIGN_SRC_DEVICE, "%s source", dev);
	T_CHECK(align_topology_validate(&t) == 0, "%s valid", dev);
	T_CHECK(align_topology_probe(dev, &p) == 0 &&
		memcmp(&p, &t, sizeof(t)) == 0, "%s: probe == from_device", dev);
}

/* As an unprivileged user libblkid cannot open the device: libalign then
 * describes it from sysfs alone, and must say the same. */
static void check_unprivileged(const char *dev)
{
	struct align_topology t, u;
	int st;
	pid_t pid;

	if (align_topology_from_device(dev, &t) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
			_exit(2);
		if (align_topology_from_device(dev, &u) < 0)
			_exit(3);
		_exit(memcmp(&t, &u, sizeof(t)) ? 4 : 0);
	}
	T_CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		WEXITSTATUS(st) == 0, "%s: sysfs-only view differs (child %d)",
		dev, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* libalign vs sysfs for /dev/@name: a description of the first mismatch
 * in @why, or "" if they agree. */
static void compare_sysfs(const char *name, char *why, size_t len)
{
	static const char *const attr[] = { "logical_block_size",
		"physical_block_size", "minimum_io_size", "optimal_io_size" };
	const char *q = "/sys/block/%s/queue/%s";
	struct align_topology t;
	long long want[6], got[6];
	char dev[300];
	int rc;

	snprintf(dev, sizeof(dev), "/dev/%s", name);
	why[0] = 0;
	rc = align_topology_from_device(dev, &t);
	if (rc == -ENOMEDIUM || rc == -ENXIO || rc == -ENODEV)
		return;   /* empty drive, gone device */
	if (rc) {
		snprintf(why, len, "%s: %s", dev, strerror(-rc));
		return;
	}
	for (int i = 0; i < 4; i++)
		want[i] = sysfs_ll(q, name, attr[i]);
	want[4] = sysfs_ll("/sys/block/%s/%s", name, "size") * 512;
	want[5] = sysfs_ll("/sys/block/%s/%s", name, "alignment_offset");
	got[0] = t.logical;
	got[1] = t.physical;
	got[2] = t.io_min;
	got[3] = t.io_opt;
	got[4] = (long long)t.size;
	got[5] = t.misaligned ? -1 : (long long)t.alignment_offset;
	for (int i = 0; i < 6; i++)
		if (got[i] != want[i]) {
			snprintf(why, len, "%s: field %d: libalign %lld, sysfs %lld",
				 dev, i, got[i], want[i]);
			return;
		}
}

/* Every other block device of this machine: libalign agrees with sysfs.
 * Loop, nbd and ublk devices come and go with other tests: left out (this
 * test checks its own loop devices above). */
static void check_all_devices(void)
{
	DIR *d = opendir("/sys/block");
	struct dirent *e;
	char dev[300], why[400];

	while (d && (e = readdir(d))) {
		struct stat st;

		if (e->d_name[0] == '.' || !strncmp(e->d_name, "loop", 4) ||
		    !strncmp(e->d_name, "nbd", 3) || !strncmp(e->d_name, "ublk", 4))
			continue;
		snprintf(dev, sizeof(dev), "/dev/%s", e->d_name);
		if (stat(dev, &st) < 0 || !S_ISBLK(st.st_mode))
			continue;
		compare_sysfs(e->d_name, why, sizeof(why));
		if (why[0]) {   /* a device that changed under us gets a retry */
			usleep(200000);
			compare_sysfs(e->d_name, why, sizeof(why));
		}
		T_CHECK(!why[0], "%s", why);
		fprintf(stderr, "%s: agrees with sysfs\n", dev);
	}
	if (d)
		closedir(d);
}

/* Partition 1 at PART_START: the kernel's own partition scan if it has
 * the DOS parser, else BLKPG_ADD_PARTITION (as partx -a does).  Then wait
 * for the node (devtmpfs), else make our own. */
static const char *part_node(int fd, const char *loopname)
{
	struct blkpg_partition bp = { .start = PART_START * 512ll,
		.length = PART_SECTORS * 512ll, .pno = 1 };
	struct blkpg_ioctl_arg arg = { .op = BLKPG_ADD_PARTITION,
		.datalen = sizeof(bp), .data = &bp };
	char p[300];
	long long mj = -1, mn = -1;
	FILE *f;

	snprintf(p, sizeof(p), "/sys/block/%s/%sp1", loopname, loopname);
	if (access(p, F_OK) != 0 && ioctl(fd, BLKPG, &arg) < 0) {
		fprintf(stderr, "BLKPG_ADD_PARTITION: %s\n", strerror(errno));
		return NULL;
	}
	snprintf(node, sizeof(node), "/dev/%sp1", loopname);
	for (int i = 0; i < 50; i++) {
		struct stat st;
		if (stat(node, &st) == 0 && S_ISBLK(st.st_mode))
			return node;
		usleep(100000);
	}
	snprintf(p, sizeof(p), "/sys/block/%s/%sp1/dev", loopname, loopname);
	f = fopen(p, "r");
	if (!f || fscanf(f, "%lld:%lld", &mj, &mn) != 2) {
		if (f)
			fclose(f);
		return NULL;
	}
	fclose(f);
	snprintf(node, sizeof(node), "%s/p1", dir);
	if (mknod(node, S_IFBLK | 0600, makedev(mj, mn)) < 0)
		return NULL;
	return node;
}

static void write_image(void)
{
	unsigned char mbr[512] = { 0 };
	unsigned char *e = mbr + 446;
	int fd = open(img, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	/* one DOS partition, type 0x83, LBA 63, PART_SECTORS long */
	e[4] = 0x83;
	memcpy(e + 8, &(uint32_t){ PART_START }, 4);
	memcpy(e + 12, &(uint32_t){ PART_SECTORS }, 4);
	mbr[510] = 0x55;
	mbr[511] = 0xaa;
	if (fd < 0 || ftruncate(fd, (off_t)IMG_SIZE) < 0 ||
	    pwrite(fd, mbr, sizeof(mbr), 0) != (ssize_t)sizeof(mbr)) {
		perror(img);
		exit(T_EXIT_FAIL);
	}
	close(fd);
}

int main(void)
{
	char dev[64];
	const char *loopname, *pn;
	int fd;

	if (geteuid() != 0)
		T_SKIP("needs root to attach loop devices");
	if (access("/dev/loop-control", F_OK) != 0)
		T_SKIP("no loop driver (/dev/loop-control missing)");
	if (!mkdtemp(dir))
		T_SKIP("cannot create a temporary directory");
	snprintf(img, sizeof(img), "%s/disk.img", dir);
	write_image();

	/* 512-byte sectors with the partition at 63 */
	fd = attach(512, dev, sizeof(dev));
	loopname = dev + 5;
	check_dev(dev, loopname, 512, IMG_SIZE, 0);
	pn = part_node(fd, loopname);
	T_CHECK(pn != NULL, "partition node of %s", dev);
	if (pn) {
		struct align_topology disk;
		T_CHECK(align_topology_from_device(dev, &disk) == 0, "disk");
		/* the kernel's sysfs figure and libalign's prediction agree */
		T_EQ_U64(sysfs_ll("/sys/block/%s/%sp1/alignment_offset", loopname,
				  loopname), align_partition_offset(&disk, PART_START),
			 "partition at %u", PART_START);
		check_dev(pn, loopname, 512, PART_SECTORS * 512ull,
			  align_partition_offset(&disk, PART_START));
		if (!strncmp(pn, dir, strlen(dir)))
			unlink(pn);
	}
	check_unprivileged(dev);
	close(fd);   /* autoclear: the kernel detaches it now */

	/* 4096-byte sectors (the MBR's 512-byte LBAs mean nothing here) */
	fd = attach(4096, dev, sizeof(dev));
	check_dev(dev, dev + 5, 4096, IMG_SIZE, 0);
	close(fd);

	check_all_devices();
	unlink(img);
	rmdir(dir);
	return t_result();
}
