# Appended to CPython's Makefile by export-build.sh: prints, one per line as
# NAME=value, the variables the driver describes the build with (objects of the
# core and of the modules, libraries each module and the core link).
PYFREIGHT_VARS = LIBRARY_OBJS MODOBJS MODLIBS LIBS SYSLIBS LINKFORSHARED MODBUILT_NAMES \
	$(filter MODULE_%_LDFLAGS,$(.VARIABLES))

pyfreight-print-vars:
	@$(foreach v,$(sort $(PYFREIGHT_VARS)),$(info $(v)=$(strip $($(v)))))
