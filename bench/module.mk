# bench: every benchmark keeps its rules in bench/<name>/module.mk (read from here, since the
# top Makefile reads only this file under bench/).
include $(sort $(wildcard bench/*/module.mk))
