/* no_vm_readv: runs a command in a sandbox that refuses process_vm_readv
 * (EPERM), as Docker's default seccomp profile does for a container
 * without CAP_SYS_PTRACE, so that the tests see the stack sampler's other
 * way of reading: a seccomp filter, inherited by the command and all its
 * children, then exec. Harsher sandboxes on request:
 *
 *     no_vm_readv [--kill | --trap | --eacces] [--no-pipe | --kill-pipe] [--vm-ok]
 *                 COMMAND [ARG...]
 *
 * --kill kills the process that calls it (SECCOMP_RET_KILL_PROCESS), --trap
 * sends it SIGSYS (SECCOMP_RET_TRAP), --eacces refuses with EACCES;
 * --no-pipe refuses pipe2 too (EPERM), the sampler's other way, and
 * --kill-pipe kills the process that calls pipe2; --vm-ok leaves
 * process_vm_readv alone (a sandbox that takes pipes only).
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "no_vm_readv: add this architecture's AUDIT_ARCH"
#endif

int main(int argc, char **argv)
{
    uint32_t action = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
    uint32_t pipe_action = SECCOMP_RET_ALLOW;
    bool vm_ok = false;
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        if (strcmp(argv[i], "--kill") == 0)
            action = SECCOMP_RET_KILL_PROCESS;
        else if (strcmp(argv[i], "--trap") == 0)
            action = SECCOMP_RET_TRAP;
        else if (strcmp(argv[i], "--eacces") == 0)
            action = SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA);
        else if (strcmp(argv[i], "--no-pipe") == 0)
            pipe_action = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
        else if (strcmp(argv[i], "--kill-pipe") == 0)
            pipe_action = SECCOMP_RET_KILL_PROCESS;
        else if (strcmp(argv[i], "--vm-ok") == 0)
            vm_ok = true;
        else
            break;
    }
    if (i >= argc) {
        fprintf(stderr, "usage: no_vm_readv [--kill | --trap | --eacces] [--no-pipe | "
                        "--kill-pipe] [--vm-ok] COMMAND [ARG...]\n");
        return 2;
    }
    struct sock_filter filter[] = {
        /* another architecture's calls (x32, i386) go through as they are */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 0, 5),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, vm_ok ? UINT32_MAX : SYS_process_vm_readv, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, action),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pipe2, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, pipe_action),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof filter / sizeof *filter, filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        perror("no_vm_readv: seccomp");
        return 1;
    }
    execvp(argv[i], argv + i);
    perror(argv[i]);
    return 127;
}
