/* The code interpreter's bridge (code_bridge.py, run by python3 inside an
 * environment), embedded read-only in the library; src/api/code_bridge.c
 * writes it into an environment that has none running. The assembler finds
 * the file through -I (src/interp, see the Makefile). Hidden: not part of
 * the ABI. */
	.section .rodata.sbx_code_bridge, "a"
	.globl sbx_code_bridge_py
	.hidden sbx_code_bridge_py
	.type sbx_code_bridge_py, %object
sbx_code_bridge_py:
	.incbin "code_bridge.py"
	.globl sbx_code_bridge_py_end
	.hidden sbx_code_bridge_py_end
sbx_code_bridge_py_end:
	.size sbx_code_bridge_py, sbx_code_bridge_py_end - sbx_code_bridge_py

	.section .note.GNU-stack, "", %progbits
