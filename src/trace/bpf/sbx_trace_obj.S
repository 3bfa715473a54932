/* The BPF recorder's object file (sbx_trace.bpf.o, built by clang -target
 * bpf), embedded read-only in the library; bpf_rec.c hands it to
 * bpf_object__open_mem. The assembler finds the file through -I (the build
 * directory, see the Makefile's BPF section). Hidden: not part of the ABI. */
	.section .rodata.sbx_trace_bpf, "a"
	.balign 8
	.globl sbx_trace_bpf_obj
	.hidden sbx_trace_bpf_obj
	.type sbx_trace_bpf_obj, %object
sbx_trace_bpf_obj:
	.incbin "sbx_trace.bpf.o"
	.globl sbx_trace_bpf_obj_end
	.hidden sbx_trace_bpf_obj_end
sbx_trace_bpf_obj_end:
	.size sbx_trace_bpf_obj, sbx_trace_bpf_obj_end - sbx_trace_bpf_obj

	.section .note.GNU-stack, "", %progbits
