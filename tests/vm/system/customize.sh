#!/bin/sh
# mmdebstrap --customize-hook of the system guest's rootfs (tests/vm/system-lib.sh): ROOT is
# the new root.  What makes it boot unattended under qemu: a fixed machine-id (no first-boot
# questions), a persistent journal, no login prompt or timers on the serial console, the
# test driver octant-system-test.service enabled.
set -eu
root=$1
here=$(dirname "$0")
echo octant-system >"$root/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 octant-system\n' >"$root/etc/hosts"
# the root disk is mounted read-write by the initramfs (system/init): no fstab line, so
# nothing waits for its device unit or fscks it at boot
echo '# <file system> <mount point> <type> <options> <dump> <pass>' >"$root/etc/fstab"
echo 0c7a5e1e0c7a5e1e0c7a5e1e0c7a5e1e >"$root/etc/machine-id"
mkdir -p "$root/etc/systemd/journald.conf.d" "$root/var/log/journal"
printf '[Journal]\nStorage=persistent\n' >"$root/etc/systemd/journald.conf.d/guest.conf"
ln -sf /lib/systemd/system/multi-user.target "$root/etc/systemd/system/default.target"
for u in serial-getty@ttyS0.service getty@tty1.service getty.target \
	 apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service \
	 fstrim.timer systemd-firstboot.service; do
	ln -sf /dev/null "$root/etc/systemd/system/$u"
done
# drivers for what this machine does not use (qemu's PC: IDE, floppy, PC speaker, KVM...):
# each module costs seconds under TCG at every boot
mkdir -p "$root/etc/modprobe.d"
for m in kvm kvm_amd kvm_intel ccp floppy pcspkr psmouse drm ata_piix ata_generic i2c_piix4 \
	 evdev serio_raw efi_pstore; do
	echo "blacklist $m"
done >"$root/etc/modprobe.d/guest-blacklist.conf"
for u in modprobe@drm.service modprobe@efi_pstore.service; do
	ln -sf /dev/null "$root/etc/systemd/system/$u"
done
install -m 0755 "$here/octant-system-test" "$root/usr/local/sbin/octant-system-test"
install -m 0644 "$here/octant-system-test.service" "$root/etc/systemd/system/"
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -sf ../octant-system-test.service "$root/etc/systemd/system/multi-user.target.wants/"
# no network in the guest: apt works from the .debs given to it
rm -f "$root"/etc/apt/sources.list.d/* "$root/etc/apt/sources.list"
# what systemd would otherwise redo at the first boot (ldconfig.service, 8 s under TCG)
chroot "$root" ldconfig
touch "$root/etc/.updated" "$root/var/.updated"
