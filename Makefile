# sbx build. `make` builds bin/sbx and lib/libsbx.{a,so}; `make test` runs the
# whole suite; `make asan` the suite under ASan+UBSan; `make bench` the
# benchmarks against peers. `make deps` installs Debian build dependencies.
# The BPF rules below come before `all`: plain `make` must still mean `all`.
.DEFAULT_GOAL := all
CC ?= cc
BUILD ?= build
O ?= -O2
SAN ?=
CFLAGS_BASE := -std=gnu11 $(O) -g -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow \
	-Wno-missing-field-initializers -Wstrict-prototypes -Wformat=2 -fvisibility=hidden \
	-fstack-protector-strong -fPIC -D_GNU_SOURCE -Iinclude -Isrc $(SAN)
ifeq ($(SAN),)
CFLAGS_BASE += -D_FORTIFY_SOURCE=2
endif
LIBS := -lseccomp -ljansson -lyaml -lcrypto -lz -lzstd -lm
# The CLI links its libraries statically: every sbx command starts faster
# (no dynamic loading of libseccomp, libjansson and libcrypto).
# Of libcrypto only SHA-256 is linked: the attestation key code
# (src/store/attest_key.c) opens libcrypto.so.3 with dlopen on first use
# (linked, its tables were 340 KiB of pointers relocated at every start).
# libcurl (push/pull) is not linked at all: src/store/registry.c opens it
# with dlopen on first use. Debian's libcurl.a needs static nghttp2, rtmp,
# ssh2, psl, gssapi and ldap archives that Debian does not ship, and linking
# it dynamically made every command load 30 more shared objects.
CLI_LIBS := -Wl,-Bstatic -lseccomp -ljansson -lyaml -lcrypto -lz -lzstd -Wl,-Bdynamic -lm
LDFLAGS += $(SAN)

LIB_SRC := $(wildcard src/build/*.c src/util/*.c src/runtime/*.c src/api/*.c src/server/*.c src/store/*.c src/policy/*.c src/trace/*.c src/plugin/*.c)
CLI_SRC := $(wildcard src/cli/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
HELPER_SRC := $(wildcard tests/helpers/*.c)
HELPER_BIN := $(HELPER_SRC:tests/helpers/%.c=$(BUILD)/helpers/%)
# Example plugins (docs/plugins.md): build/plugins/*.so, built against
# include/sbx_plugin.h only, as a plugin of someone else's would be.
PLUGIN_SRC := $(wildcard examples/plugins/*.c)
PLUGIN_SO := $(PLUGIN_SRC:examples/plugins/%.c=$(BUILD)/plugins/%.so)

# ---- BPF recorder (src/trace/bpf/) -------------------------------------------
# The kernel side of the eBPF syscall recorder is compiled with clang for the
# BPF target against hand-written CO-RE types (no vmlinux.h, no bpftool), then
# embedded into the library with .incbin; bpf_rec.c loads it with libbpf.
# Placed before the rules below: they expand LIB_OBJ and the link flags.
BPF_CLANG ?= clang
BPF_ARCH := $(patsubst x86_64,x86,$(patsubst aarch64,arm64,$(firstword $(subst -, ,$(shell $(CC) -dumpmachine)))))
BPF_OBJ := $(BUILD)/src/trace/bpf/sbx_trace.bpf.o
BPF_EMBED := $(BUILD)/src/trace/bpf/sbx_trace_obj.o
LIB_OBJ += $(BPF_EMBED)
LIBS += -lbpf -lelf
# The CLI links libbpf statically like its other libraries; libbpf.a needs
# libelf.a and zlib (already in CLI_LIBS).
CLI_LIBS := -Wl,-Bstatic -lbpf -lelf -Wl,-Bdynamic $(CLI_LIBS)

$(BPF_OBJ): src/trace/bpf/sbx_trace.bpf.c $(wildcard src/trace/bpf/*.h) src/trace/trace_format.h
	@mkdir -p $(dir $@)
	@echo "  BPF $<"
	@$(BPF_CLANG) -O2 -g -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -Wall -Werror -Isrc -c $< -o $@

$(BPF_EMBED): src/trace/bpf/sbx_trace_obj.S $(BPF_OBJ)
	@echo "  AS $<"
	@$(CC) -c $< -o $@ -Wa,-I$(dir $(BPF_OBJ))

$(BUILD)/src/trace/bpf_rec.o: $(wildcard src/trace/bpf/*.h)
# ---- end of BPF recorder -------------------------------------------------------

# ---- code interpreter bridge (src/interp/) -----------------------------------
# The Python program that serves the code interpreter inside an environment
# and the kernels it starts for javascript, typescript and bash,
# embedded into the library with .incbin (docs/code.md); src/api/code_conn.c
# writes them into the environment when no bridge runs there.
CODE_BRIDGE_EMBED := $(BUILD)/src/interp/code_bridge_obj.o
LIB_OBJ += $(CODE_BRIDGE_EMBED)

$(CODE_BRIDGE_EMBED): src/interp/code_bridge_obj.S src/interp/code_bridge.py src/interp/code_kernels.py src/interp/code_node.js src/interp/code_python.py
	@mkdir -p $(dir $@)
	@echo "  AS $<"
	@$(CC) -c $< -o $@ -Wa,-Isrc/interp
# ---- end of code interpreter bridge ----------------------------------------------

FORCE:
.PHONY: FORCE all clean test unit asan asan-ci bench fuzz format deps demo check-format check-layers install uninstall man
all: $(BUILD)/bin/sbx $(BUILD)/lib/libsbx.so $(UNIT_BIN) $(HELPER_BIN) $(PLUGIN_SO)
	@ln -sfn $(BUILD)/bin bin

$(BUILD)/%.o: %.c $(wildcard include/*.h src/*/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC $<"
	@$(CC) $(CFLAGS_BASE) $(CFLAGS) -c $< -o $@

$(BUILD)/lib/libsbx.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/lib/libsbx.so: $(LIB_OBJ) src/libsbx.lds Makefile
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(LIB_OBJ) -Wl,-soname,libsbx.so.0 -Wl,--version-script=src/libsbx.lds $(LDFLAGS) $(LIBS)

$(BUILD)/bin/sbx: $(CLI_OBJ) $(BUILD)/lib/libsbx.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(CLI_OBJ) $(BUILD)/lib/libsbx.a $(LDFLAGS) $(CLI_LIBS)

$(BUILD)/tests/test_%: tests/unit/test_%.c tests/unit/unit.h $(BUILD)/lib/libsbx.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -Itests/unit -o $@ $< $(BUILD)/lib/libsbx.a $(LDFLAGS) $(LIBS)

# In-sandbox probes are static so they run in any rootfs (busybox, debootstrap).
$(BUILD)/helpers/%: tests/helpers/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -Wall -Werror -static -o $@ $<

$(BUILD)/plugins/%.so: examples/plugins/%.c include/sbx_plugin.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(O) -g -Wall -Wextra -Werror -Wno-unused-parameter -fPIC -shared -Iinclude -o $@ $< -ljansson

test: all
	tests/run

unit: $(UNIT_BIN)
	tests/run --unit

ASAN_MAKE = $(MAKE) BUILD=build-asan O=-O1 SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" all
ASAN_ENV = SBX_BUILD=build-asan ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
asan:
	$(ASAN_MAKE)
	$(ASAN_ENV) tests/run

# What CI runs under ASan+UBSan within its time: the unit tests and the
# integration files that drive the most library code through the CLI and MCP
# (the whole suite under ASan is `make asan`). test_ptrace_engine is left
# out here: its timing-heavy determinism cases run 3-10x slower under ASan
# and it runs in the normal suite; so are the files whose clients time out
# under ASan's slowdown (test_statedir's 16 creates through one server).
ASAN_CI_FILES ?= test_lifecycle test_exec test_badinput test_cp test_mcp_tools test_mcp_hardening test_attest test_process test_e2b_ctl
asan-ci:
	$(ASAN_MAKE)
	$(ASAN_ENV) SBX_UNIT_EXCLUDE=test_ptrace_engine tests/run --unit
	@for f in $(ASAN_CI_FILES); do $(ASAN_ENV) tests/run $$f || exit 1; done

bench: all
	bench/run
	bench/snapshot
	bench/mcp
	bench/e2b
	bench/pool/run
	bench/restore_standby
	bench/determinism/run
	bench/trace
	bench/proxy
	bench/load/run
	bench/code/run

fuzz:
	tests/fuzz/run

FORMAT_SRC = $(LIB_SRC) $(CLI_SRC) $(wildcard src/*/*.h include/*.h tests/unit/*.c tests/unit/*.h tests/helpers/*.c tests/fuzz/*.c examples/plugins/*.c)
format:
	clang-format -i $(FORMAT_SRC)

# What .ci/run checks: every C file as .clang-format says (no changes made).
check-format:
	@clang-format --dry-run -Werror $(FORMAT_SRC) && echo "check-format: $(words $(FORMAT_SRC)) files clean"

# The layering of src/api (docs/layout.md): no cycle between its files and no
# call up the declared order (scripts/check-layers.py), read from the objects.
API_OBJ := $(filter $(BUILD)/src/api/%,$(LIB_OBJ))
check-layers: $(API_OBJ)
	@scripts/check-layers.py --build $(BUILD)

# ---- install ---------------------------------------------------------------------
# `make install [PREFIX=/usr/local] [DESTDIR=...]`: the CLI and sbx-runc, the library
# (shared and static), the public headers, a pkg-config file and the man
# pages (sbx.1, sbx-runc.1: the --help texts, by scripts/mkman.sh). Programs
# build with `pkg-config --cflags --libs sbx`, or `--static` for libsbx.a.
VERSION := $(shell sed -n 's/.*sbx_version(void) { return "\(.*\)"; }.*/\1/p' src/api/ctx.c)
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
MANDIR ?= $(PREFIX)/share/man
MAN_PAGES := $(BUILD)/man/sbx.1 $(BUILD)/man/sbx-runc.1

$(BUILD)/man/sbx.1: $(BUILD)/bin/sbx scripts/mkman.sh
	@mkdir -p $(dir $@)
	scripts/mkman.sh $(BUILD)/bin/sbx sbx "sandboxed environments for AI agents" --commands > $@.tmp && mv $@.tmp $@
$(BUILD)/man/sbx-runc.1: $(BUILD)/bin/sbx-runc scripts/mkman.sh
	@mkdir -p $(dir $@)
	scripts/mkman.sh $(BUILD)/bin/sbx-runc sbx-runc "an OCI runtime (the runc command line) over sbx's walls" > $@.tmp && mv $@.tmp $@
man: $(MAN_PAGES)

$(BUILD)/sbx.pc: FORCE
	@mkdir -p $(dir $@)
	@printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(LIBDIR)' 'includedir=$(INCLUDEDIR)' '' \
		'Name: sbx' 'Description: sandboxed environments for AI agents (namespaces, snapshots, traces)' \
		'Version: $(VERSION)' 'Cflags: -I$${includedir}' 'Libs: -L$${libdir} -lsbx' \
		'Libs.private: -lbpf -lelf -lseccomp -ljansson -lyaml -lcrypto -lzstd -lz -lm' > $@

install: $(BUILD)/bin/sbx $(BUILD)/bin/sbx-runc $(BUILD)/lib/libsbx.so $(BUILD)/lib/libsbx.a $(BUILD)/sbx.pc $(MAN_PAGES)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(MANDIR)/man1
	install -m 755 $(BUILD)/bin/sbx $(BUILD)/bin/sbx-runc $(DESTDIR)$(BINDIR)/
	install -m 755 $(BUILD)/lib/libsbx.so $(DESTDIR)$(LIBDIR)/libsbx.so.$(VERSION)
	ln -sfn libsbx.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libsbx.so.0
	ln -sfn libsbx.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libsbx.so
	install -m 644 $(BUILD)/lib/libsbx.a $(DESTDIR)$(LIBDIR)/libsbx.a
	install -m 644 include/sbx.h include/sbx_plugin.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 $(BUILD)/sbx.pc $(DESTDIR)$(PKGCONFIGDIR)/sbx.pc
	install -m 644 $(MAN_PAGES) $(DESTDIR)$(MANDIR)/man1/

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/sbx $(DESTDIR)$(BINDIR)/sbx-runc $(DESTDIR)$(LIBDIR)/libsbx.so $(DESTDIR)$(LIBDIR)/libsbx.so.0 $(DESTDIR)$(LIBDIR)/libsbx.so.$(VERSION) \
		$(DESTDIR)$(LIBDIR)/libsbx.a $(DESTDIR)$(INCLUDEDIR)/sbx.h $(DESTDIR)$(INCLUDEDIR)/sbx_plugin.h \
		$(DESTDIR)$(PKGCONFIGDIR)/sbx.pc $(DESTDIR)$(MANDIR)/man1/sbx.1 $(DESTDIR)$(MANDIR)/man1/sbx-runc.1

deps:
	scripts/deps.sh build

demo: all
	examples/demo.sh

clean:
	rm -rf build build-asan bin

# ---- sbx-runc (docs/runc.md) -----------------------------------------------------
# The OCI runtime binary: src/runc/ over libsbx.a, linked statically like the CLI.
RUNC_SRC := $(wildcard src/runc/*.c)
RUNC_OBJ := $(RUNC_SRC:%.c=$(BUILD)/%.o)
RUNC_PURE_OBJ := $(addprefix $(BUILD)/src/runc/,oci_spec.o oci_spec_get.o oci_names.o oci_resources.o oci_state.o)
all: $(BUILD)/bin/sbx-runc
$(BUILD)/bin/sbx-runc: $(RUNC_OBJ) $(BUILD)/lib/libsbx.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(RUNC_OBJ) $(BUILD)/lib/libsbx.a $(LDFLAGS) $(CLI_LIBS)
# Its unit tests link the pure parsers too.
$(BUILD)/tests/test_runc_%: tests/unit/test_runc_%.c tests/unit/unit.h $(RUNC_PURE_OBJ) $(BUILD)/lib/libsbx.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -Itests/unit -o $@ $< $(RUNC_PURE_OBJ) $(BUILD)/lib/libsbx.a $(LDFLAGS) $(LIBS)
