# dist: make install / make uninstall — both tools, libalign, man pages,
# bash completion, the systemd unit, the udev rule and their helpers.
#
#   make install [DESTDIR=/tmp/stage] [PREFIX=/usr/local] [BINDIR=...] [LIBDIR=...]
#   make uninstall (same variables)
#
# Debian multiarch: make install PREFIX=/usr LIBDIR=/usr/lib/x86_64-linux-gnu
PREFIX        ?= /usr/local
BINDIR        ?= $(PREFIX)/bin
LIBDIR        ?= $(PREFIX)/lib
INCLUDEDIR    ?= $(PREFIX)/include
LIBEXECDIR    ?= $(PREFIX)/libexec
DATADIR       ?= $(PREFIX)/share
MANDIR        ?= $(DATADIR)/man
PKGCONFIGDIR  ?= $(LIBDIR)/pkgconfig
BASHCOMPDIR   ?= $(DATADIR)/bash-completion/completions
# systemd reads /usr/local/lib/systemd/system too; udev reads no rules under
# /usr/local, so a /usr/local install puts its rule in /etc/udev/rules.d.
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
UDEVRULESDIR  ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/udev/rules.d,/etc/udev/rules.d)
OCTANT_LIBEXEC = $(LIBEXECDIR)/octant
# nbdkit finds plugins by name here when LIBDIR is its own (Debian:
# PREFIX=/usr LIBDIR=/usr/lib/x86_64-linux-gnu); else by path.
NBDKIT_PLUGINDIR ?= $(LIBDIR)/nbdkit/plugins
SOVERSION     := 0

INSTALL       ?= install
D              = $(DESTDIR)

# libdir/includedir in the .pc relative to ${prefix} when below it.
pc_rel = $(if $(filter $(PREFIX)/%,$(1)),$${prefix}/$(patsubst $(PREFIX)/%,%,$(1)),$(1))
define pc_sed
sed -e 's|@VERSION@|$(VERSION)|' -e 's|@PREFIX@|$(PREFIX)|' \
    -e 's|@LIBDIR@|$(call pc_rel,$(LIBDIR))|' \
    -e 's|@INCLUDEDIR@|$(call pc_rel,$(INCLUDEDIR))|'
endef
# paths the unit, the rule and the helpers name
define dist_sed
sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@OCTANT_LIBEXEC@|$(OCTANT_LIBEXEC)|g' \
    -e 's|@VERSION@|$(VERSION)|g'
endef

DIST_BASHCOMP := ublk-flash alignpart
MAN8          := docs/ublk-flash.8 docs/alignpart.8

.PHONY: install install-libalign uninstall deb
# make deb: the Debian packages of debian/, built as from a clean clone, then lintian
# (mk/deb.sh; docs/install.md).  Into $(BUILD)/deb.
deb:
	@mk/deps.sh deb
	@BUILD=$(BUILD) mk/deb.sh
# libalign alone: header, .a, .so.VERSION + soname and linker-name links, .pc
install-libalign: $(BUILD)/libalign.a $(BUILD)/libalign.so
	$(INSTALL) -d $(D)$(LIBDIR) $(D)$(PKGCONFIGDIR) $(D)$(INCLUDEDIR)/octant
	$(INSTALL) -m 644 libalign/align.h $(D)$(INCLUDEDIR)/octant/align.h
	$(INSTALL) -m 644 $(BUILD)/libalign.a $(D)$(LIBDIR)/libalign.a
	$(INSTALL) -m 755 $(BUILD)/libalign.so $(D)$(LIBDIR)/libalign.so.$(VERSION)
	ln -sfn libalign.so.$(VERSION) $(D)$(LIBDIR)/libalign.so.$(SOVERSION)
	ln -sfn libalign.so.$(SOVERSION) $(D)$(LIBDIR)/libalign.so
	$(pc_sed) libalign/libalign.pc.in > $(D)$(PKGCONFIGDIR)/libalign.pc
	chmod 644 $(D)$(PKGCONFIGDIR)/libalign.pc

install: install-libalign $(BUILD)/ublk-flash $(BUILD)/alignpart \
         $(BUILD)/nbdkit-octant-plugin.so
	$(INSTALL) -d $(D)$(BINDIR) $(D)$(MANDIR)/man8 $(D)$(BASHCOMPDIR) \
		$(D)$(SYSTEMDUNITDIR) $(D)$(UDEVRULESDIR) $(D)$(OCTANT_LIBEXEC) \
		$(D)$(NBDKIT_PLUGINDIR)
	$(INSTALL) -m 755 $(BUILD)/nbdkit-octant-plugin.so $(D)$(NBDKIT_PLUGINDIR)/
	$(INSTALL) -m 755 $(BUILD)/ublk-flash $(BUILD)/alignpart $(D)$(BINDIR)/
	$(INSTALL) -m 644 $(MAN8) $(D)$(MANDIR)/man8/
	$(INSTALL) -m 644 $(addprefix dist/bash-completion/,$(DIST_BASHCOMP)) $(D)$(BASHCOMPDIR)/
	$(dist_sed) dist/systemd/ublk-flash@.service.in > $(D)$(SYSTEMDUNITDIR)/ublk-flash@.service
	$(dist_sed) dist/udev/60-octant.rules.in > $(D)$(UDEVRULESDIR)/60-octant.rules
	$(dist_sed) dist/libexec/ublk-flash-service.in > $(D)$(OCTANT_LIBEXEC)/ublk-flash-service
	$(dist_sed) dist/libexec/octant-udev-name.in > $(D)$(OCTANT_LIBEXEC)/octant-udev-name
	chmod 644 $(D)$(SYSTEMDUNITDIR)/ublk-flash@.service $(D)$(UDEVRULESDIR)/60-octant.rules
	chmod 755 $(D)$(OCTANT_LIBEXEC)/ublk-flash-service $(D)$(OCTANT_LIBEXEC)/octant-udev-name

# Removes every file install writes, then the folders only octant uses.
uninstall:
	rm -f $(D)$(BINDIR)/ublk-flash $(D)$(BINDIR)/alignpart \
	      $(D)$(INCLUDEDIR)/octant/align.h \
	      $(D)$(LIBDIR)/libalign.a $(D)$(LIBDIR)/libalign.so \
	      $(D)$(LIBDIR)/libalign.so.$(SOVERSION) $(D)$(LIBDIR)/libalign.so.$(VERSION) \
	      $(D)$(PKGCONFIGDIR)/libalign.pc \
	      $(addprefix $(D)$(MANDIR)/man8/,$(notdir $(MAN8))) \
	      $(addprefix $(D)$(BASHCOMPDIR)/,$(DIST_BASHCOMP)) \
	      $(D)$(SYSTEMDUNITDIR)/ublk-flash@.service $(D)$(UDEVRULESDIR)/60-octant.rules \
	      $(D)$(OCTANT_LIBEXEC)/ublk-flash-service $(D)$(OCTANT_LIBEXEC)/octant-udev-name \
	      $(D)$(NBDKIT_PLUGINDIR)/nbdkit-octant-plugin.so
	rmdir $(D)$(INCLUDEDIR)/octant $(D)$(OCTANT_LIBEXEC) 2>/dev/null || true

