# libstore: tesseld's SQLite store (schema, named statements, migrations).  Static.
# (Other libraries are named by path: module.mk files are included in alphabetical order.)
LIBSTORE_SRCS := src/common/libstore/store.c
LIBSTORE := $(O)/lib/libtsl-store.a
LIBS += $(LIBSTORE)
$(LIBSTORE): $(LIBSTORE_SRCS:%.c=$(O)/obj/%.o)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

TESTS += $(O)/tests/libstore/test_store
$(O)/tests/libstore/test_store: $(O)/obj/src/common/libstore/test/test_store.o $(LIBSTORE) \
                                $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lsqlite3 -lcmocka

# Projects and their members (migration 12).
TESTS += $(O)/tests/libstore/test_projects
$(O)/tests/libstore/test_projects: $(O)/obj/src/common/libstore/test/test_projects.o $(LIBSTORE) \
                                   $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lsqlite3 -lcmocka

# Folders and their shares (docs/folders.md).
TESTS += $(O)/tests/libstore/test_folders
$(O)/tests/libstore/test_folders: $(O)/obj/src/common/libstore/test/test_folders.o $(LIBSTORE) \
                                  $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lsqlite3 -lcmocka
