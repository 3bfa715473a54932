/* File descriptor helpers: whole reads/writes and SCM_RIGHTS messages. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define FD_MSG_MAX_FDS 64
/* Largest control message (one JSON document) on SOCK_SEQPACKET sockets. */
#define FD_MSG_MAX (256 * 1024)

ssize_t fd_write_all(int fd, const void *buf, size_t len);
/* Reads until EOF or `max` bytes; *ret_buf is NUL-terminated (caller frees). */
int fd_read_all(int fd, size_t max, char **ret_buf, size_t *ret_len);
/* Sends one datagram carrying `len` bytes and n_fds descriptors. */
int fd_send_msg(int sock, const void *buf, size_t len, const int *fds, size_t n_fds);
/* Receives one datagram into buf (cap bytes, NUL-terminated, so cap-1 data).
 * Received descriptors are O_CLOEXEC; *n_fds in/out. Returns the length,
 * 0 on EOF, negative errno on failure; -EMSGSIZE if truncated (fds closed). */
ssize_t fd_recv_msg(int sock, char *buf, size_t cap, int *fds, size_t *n_fds);
int fd_set_nonblock(int fd, int on);
int fd_set_cloexec(int fd, int on);
/* getsockopt(SOL_SOCKET, opt) as an int; -1 on failure. */
int fd_sock_opt(int fd, int opt);
/* Whether fd is a fresh TCP socket: a socket of AF_INET, SOCK_STREAM,
 * IPPROTO_TCP, neither bound nor connected nor listening (what init's
 * "socket" file action gives; anything else the environment could pass is
 * refused, never used). */
bool fd_is_fresh_tcp(int fd);
/* Moves fd to >= 3 if it is 0..2 (so dup2 into 0..2 cannot clobber it). */
int fd_move_above_stdio(int fd);
