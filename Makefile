# shardkit: build, test, bench, install.
#   make            build bin/shardkit, libshardkit.{a,so}, shardkit.pc
#   make demo       pack a generated demo corpus into indexed shards
#   make check      unit + end-to-end tests; ends with "N passed, N failed"
#   make check-asan the same suite under AddressSanitizer + UBSan
#   make check-rgw  the S3 tests against a RADOS gateway instead of moto
#   make check-layers  the layer direction and the exported symbols
#   make fuzz       libFuzzer targets, FUZZ_SECONDS each (clang)
#   make bench      benchmarks against GNU tar, bsdtar, Python (not in check)
#   make install PREFIX=/usr/local DESTDIR=   (also the Python package, into
#                   PYTHON_SITE: PREFIX/lib/pythonX.Y/site-packages of $(PYTHON))
SHELL    := /bin/bash
VERSION  := 0.1.0
PREFIX   ?= /usr/local
DESTDIR  ?=
BUILD    ?= build
CC       ?= cc
PKGS     := libarchive libcurl openssl libjpeg libzstd expat jansson libmicrohttpd fuse3 liburing
# What the library links.  libcurl, OpenSSL's libcrypto and libarchive are
# not linked: lib/s3/s3_libs.c and lib/format/libarchive.c open them
# (dlopen) the first time S3 or a libarchive reader is used (libfuse3 too,
# by `shardkit mount`: lib/tools/mount_libs.c; liburing by the global
# order's local reads: lib/io/read_batch.c), so that a
# process that needs neither (`--version`, a local `get`) does not load
# their ~40 libraries.  Their headers (and run-time packages) are still
# needed.
LINK_PKGS := libjpeg libzstd expat jansson
OPT      ?= -O2 -g
PYTHON   ?= python3
# The Python package (python/shardkit, pure Python) is copied there by
# make install: no pip, so it works offline; empty when there is no Python.
PYTHON_SITE ?= $(shell $(PYTHON) -c 'import sys; print("$(PREFIX)/lib/python%d.%d/site-packages" % sys.version_info[:2])' 2>/dev/null)
SAN      ?=
# The Python package's compiled lookups (python/shardkit/_ext.c) for the
# source tree's tests and benchmarks, beside the library (pip builds its own
# copy into the package: python/setup.py).  Built for $(PYTHON) when it has
# its headers (python3-dev), and not under a sanitizer (an uninstrumented
# python cannot load it); without it the package uses ctypes alone.
PY_EXT_SUFFIX := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX") or "")' 2>/dev/null)
PY_EXT_SO := $(if $(SAN),,$(if $(PY_EXT_SUFFIX),$(BUILD)/python/_ext$(PY_EXT_SUFFIX)))
# -Wno-format-truncation is gcc's; clang 14 rejects it under -Werror
WNO_TRUNC := $(shell $(CC) -Werror -Wno-format-truncation -x c -c /dev/null -o /dev/null 2>/dev/null && echo -Wno-format-truncation)
# the project itself builds on the whole header, its unstable part included
override CFLAGS += -std=c11 -D_GNU_SOURCE -DSK_VERSION='"$(VERSION)"' -DSHARDKIT_UNSTABLE_API \
	-Wall -Wextra -Werror -Wshadow -Wno-unused-parameter $(WNO_TRUNC) -fPIC -pthread -Ilib \
	$(OPT) $(SAN)
DEPS_OK  := $(BUILD)/.deps-ok

LAYERS   := core format s3 io pack tools reader
LIB_SRC  := $(sort $(foreach l,$(LAYERS),$(wildcard lib/$(l)/*.c)))
CMD_SRC  := $(sort $(wildcard cmd/*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
TOOL_SRC := $(sort $(wildcard tests/tools/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
CMD_OBJ  := $(CMD_SRC:%.c=$(BUILD)/%.o)
UNITS    := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TOOLS    := $(TOOL_SRC:tests/tools/%.c=$(BUILD)/tools/%)
BIN      := $(BUILD)/shardkit

all: $(BIN) $(BUILD)/libshardkit.so $(BUILD)/shardkit.pc $(TOOLS) $(PY_EXT_SO)

# On a fresh machine, install what is missing once (scripts/deps is
# idempotent): the build group before the first compile, the check group
# (test peers, moto, Slurm, PyTorch) only before the tests.
$(DEPS_OK): scripts/deps
	@mkdir -p $(BUILD)
	@pkg-config --exists $(PKGS) && command -v python3 >/dev/null \
	    && ls /usr/include/python3*/Python.h >/dev/null 2>&1 || ./scripts/deps build
	@touch $@

CHECK_DEPS_OK := $(BUILD)/.check-deps-ok
$(CHECK_DEPS_OK): scripts/deps
	@mkdir -p $(BUILD)
	@if pkg-config --exists cmocka && command -v bsdtar >/dev/null \
	   && command -v cjpeg >/dev/null && command -v zstd >/dev/null && command -v clang >/dev/null \
	   && { command -v slurmctld || test -x /usr/sbin/slurmctld; } >/dev/null \
	   && command -v moto_server >/dev/null && command -v aws >/dev/null \
	   && command -v radosgw >/dev/null && command -v chromium >/dev/null \
	   && command -v pytest-3 >/dev/null && command -v openssl >/dev/null && command -v fusermount3 >/dev/null && test -x /usr/sbin/nginx; then :; \
	 else ./scripts/deps check; fi
	@touch $@

LIBS = -Wl,--as-needed $(shell pkg-config --libs $(LINK_PKGS)) -lpthread -lm

# -MMD -MP: each object depends on exactly the headers it includes, so a
# touched header rebuilds its dependants and nothing else.
$(BUILD)/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(dir $@)
	@echo "  CC $<"; $(CC) $(CFLAGS) -MMD -MP -c $< -o $@

# The library's own objects hide every symbol but those shardkit.h marks
# SK_API, so libshardkit.so exports its API and nothing else.
$(BUILD)/lib/%.o: lib/%.c | $(DEPS_OK)
	@mkdir -p $(dir $@)
	@echo "  CC $<"; $(CC) $(CFLAGS) -fvisibility=hidden -MMD -MP -c $< -o $@

$(BUILD)/libshardkit.a: $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libshardkit.so: $(LIB_OBJ)
	$(CC) $(CFLAGS) -shared -Wl,-soname,libshardkit.so.0 -o $@ $^ $(LIBS)

$(BIN): $(CMD_OBJ) $(BUILD)/libshardkit.a
	$(CC) $(CFLAGS) -o $@ $(CMD_OBJ) $(BUILD)/libshardkit.a $(LIBS)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libshardkit.a | $(CHECK_DEPS_OK)
	@mkdir -p $(dir $@) $(BUILD)/deps
	@echo "  LD $@"; $(CC) $(CFLAGS) -Itests/unit -MMD -MP -MF $(BUILD)/deps/$(notdir $@).d -o $@ $< $(BUILD)/libshardkit.a $(LIBS) -lcmocka

$(BUILD)/tools/%: tests/tools/%.c $(BUILD)/libshardkit.a
	@mkdir -p $(dir $@) $(BUILD)/deps
	@echo "  LD $@"; $(CC) $(CFLAGS) -MMD -MP -MF $(BUILD)/deps/tool-$(notdir $@).d -o $@ $< $(BUILD)/libshardkit.a $(LIBS)

$(BUILD)/shardkit.pc: shardkit.pc.in Makefile
	@mkdir -p $(BUILD)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
	    -e 's|@PKGS@|$(LINK_PKGS)|' $< > $@

$(BUILD)/python/_ext%: python/shardkit/_ext.c lib/shardkit.h | $(DEPS_OK)
	@mkdir -p $(dir $@)
	@inc=$$($(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["include"])'); \
	if [ -f "$$inc/Python.h" ]; then \
	    echo "  CC $<"; $(CC) $(CFLAGS) -I"$$inc" -fvisibility=hidden -shared -o $@ $<; \
	else echo "  no $$inc/Python.h: shardkit._ext not built (the package uses ctypes)"; fi

check: all $(UNITS) | $(CHECK_DEPS_OK)
	@SK_BUILD=$(BUILD) tests/run

# Every test that starts an S3 server, run again against a RADOS gateway (a
# one-node Ceph cluster, tests/helpers/rgw.sh) instead of moto_server.
check-rgw: all $(UNITS) | $(CHECK_DEPS_OK)
	@SK_S3_SERVER=rgw SK_BUILD=$(BUILD) tests/run

# The layer direction, cmd/ on the public API only, and the exports of the
# shared library (scripts/check-layers); tests/e2e/house.sh runs it too.
check-layers: all
	@scripts/check-layers $(BUILD)

# libFuzzer targets, one per parser (fuzz/fuzz_*.c; docs/fuzzing.md): the
# library built by clang with the fuzzer's coverage and ASan + UBSan in
# $(FUZZ_BUILD), each target linked against it.  `make fuzz` runs each for
# FUZZ_SECONDS on seeds fuzz/seeds.sh makes; tests/e2e/fuzz_smoke.sh runs
# them briefly in `make check` when clang's libFuzzer is there.
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 30
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_TARGETS := $(patsubst fuzz/%.c,%,$(sort $(wildcard fuzz/fuzz_*.c)))

fuzz-build: all
	@$(MAKE) -s BUILD=$(FUZZ_BUILD) CC=clang OPT='-O1 -g' \
	    SAN='-fsanitize=fuzzer-no-link $(FUZZ_SAN)' $(FUZZ_BUILD)/libshardkit.a
	@$(MAKE) -s $(addprefix $(FUZZ_BUILD)/fuzz/,$(FUZZ_TARGETS))

# each target links on its own, so `make -j` links them side by side
$(FUZZ_BUILD)/fuzz/fuzz_%: fuzz/fuzz_%.c $(FUZZ_BUILD)/libshardkit.a
	@echo "  LD $@"; mkdir -p $(@D)
	@clang -std=c11 -D_GNU_SOURCE -DSHARDKIT_UNSTABLE_API -Ilib -O1 -g -fsanitize=fuzzer $(FUZZ_SAN) -o $@ \
	    $< $(FUZZ_BUILD)/libshardkit.a $(LIBS)

fuzz: fuzz-build
	@fuzz/seeds.sh $(BUILD) $(FUZZ_BUILD)/seeds
	@for t in $(FUZZ_TARGETS); do \
	    c=$(FUZZ_BUILD)/corpus/$${t#fuzz_}; mkdir -p $$c; \
	    echo "== $$t ($(FUZZ_SECONDS) s)"; \
	    $(FUZZ_BUILD)/fuzz/$$t -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -print_final_stats=1 \
	        $$c $(FUZZ_BUILD)/seeds/$${t#fuzz_} 2>&1 | grep -E 'stat::number_of_executed_units|ERROR|SUMMARY' ; \
	    [ $${PIPESTATUS[0]} -eq 0 ] || exit 1; \
	done

check-asan:
	$(MAKE) BUILD=build-asan OPT='-O1 -g' \
	    SAN='-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all' check

demo: all
	@BUILD=$(BUILD) samples/demo.sh

bench: all
	@./scripts/deps bench
	@BUILD=$(BUILD) bench/run

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	    $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/share/doc/shardkit
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/shardkit
	install -m 644 $(BUILD)/libshardkit.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(BUILD)/libshardkit.so $(DESTDIR)$(PREFIX)/lib/libshardkit.so.$(VERSION)
	ln -sf libshardkit.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libshardkit.so.0
	ln -sf libshardkit.so.0 $(DESTDIR)$(PREFIX)/lib/libshardkit.so
	install -m 644 lib/shardkit.h $(DESTDIR)$(PREFIX)/include/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' -e 's|@PKGS@|$(LINK_PKGS)|' \
	    shardkit.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/shardkit.pc
	install -m 644 README.md docs/*.md $(DESTDIR)$(PREFIX)/share/doc/shardkit/
	@# man pages and bash/zsh completion, generated from the binary's --help
	scripts/gen-cli $(BIN) man $(BUILD)/man
	scripts/gen-cli $(BIN) completion $(BUILD)/completion
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/bash-completion/completions \
	    $(DESTDIR)$(PREFIX)/share/zsh/site-functions
	install -m 644 $(BUILD)/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 $(BUILD)/completion/shardkit.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/shardkit
	install -m 644 $(BUILD)/completion/_shardkit $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_shardkit
	@# the package finds the library three levels up (PREFIX/lib), or
	@# through the LIBDIR written here when PYTHON_SITE is elsewhere
	if [ -n "$(PYTHON_SITE)" ]; then \
	    install -d $(DESTDIR)$(PYTHON_SITE)/shardkit && \
	    install -m 644 python/shardkit/*.py python/shardkit/py.typed $(DESTDIR)$(PYTHON_SITE)/shardkit/ && \
	    echo 'LIBDIR = "$(PREFIX)/lib"' > $(DESTDIR)$(PYTHON_SITE)/shardkit/_install.py; \
	fi
	@# its compiled lookups, when built (else the package uses ctypes)
	if [ -n "$(PYTHON_SITE)" ] && [ -f "$(PY_EXT_SO)" ]; then \
	    install -m 755 $(PY_EXT_SO) $(DESTDIR)$(PYTHON_SITE)/shardkit/; \
	fi

# the usage block of each docs/CMD.md, rewritten from `shardkit CMD --help`
# (tests/e2e/cli_docs.sh fails while one differs)
docs: $(BIN)
	scripts/gen-cli $(BIN) docs docs

clean:
	rm -rf build build-asan build-clang build-fuzz

.PHONY: all check check-layers check-asan demo bench install clean fuzz fuzz-build docs

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
