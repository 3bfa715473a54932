/* The code interpreter's bridge (code_bridge.py, run by python3 inside an
 * environment) and sbx's kernels for javascript, typescript and bash that it
 * starts (code_kernels.py, with code_node.js its node child) with the
 * launcher of its Python kernel (code_python.py), embedded
 * read-only in the library; src/api/code_conn.c writes them into an
 * environment that has no bridge running. The assembler finds the files
 * through -I (src/interp, see the Makefile). Hidden: not part of the ABI. */
	.macro sbx_embed name, file
	.section .rodata.\name, "a"
	.globl \name
	.hidden \name
	.type \name, %object
\name:
	.incbin "\file"
	.globl \name\()_end
	.hidden \name\()_end
\name\()_end:
	.size \name, \name\()_end - \name
	.endm

	sbx_embed sbx_code_bridge_py, "code_bridge.py"
	sbx_embed sbx_code_kernels_py, "code_kernels.py"
	sbx_embed sbx_code_node_js, "code_node.js"
	sbx_embed sbx_code_python_py, "code_python.py"

	.section .note.GNU-stack, "", %progbits
