/* sysroot.c: redirectable, allocation-free re-reading of kernel files. */
#include "collect/sysroot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/text_parse.h"

bool tp_sysroot_open(tp_sysroot *root, const char *path)
{
    root->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    snprintf(root->path, sizeof root->path, "%s", path);
    return root->dirfd >= 0;
}

void tp_sysroot_close(tp_sysroot *root)
{
    if (root->dirfd >= 0)
        close(root->dirfd);
    root->dirfd = -1;
}

const char *tp_sysroot_default_path(void)
{
    const char *env = getenv("TRAINPROF_SYSROOT");
    return env && *env ? env : "/";
}

int tp_sysroot_openat(const tp_sysroot *root, const char *rel, int flags)
{
    while (*rel == '/')
        rel++;
    return openat(root->dirfd, rel, flags | O_CLOEXEC);
}

bool tp_sysroot_exists(const tp_sysroot *root, const char *rel)
{
    while (*rel == '/')
        rel++;
    return faccessat(root->dirfd, rel, F_OK, 0) == 0;
}

bool tp_procfile_open(tp_procfile *pf, const tp_sysroot *root, const char *rel)
{
    pf->buf = NULL;
    pf->cap = pf->len = 0;
    pf->fd = tp_sysroot_openat(root, rel, O_RDONLY);
    return pf->fd >= 0;
}

bool tp_procfile_read(tp_procfile *pf)
{
    if (pf->fd < 0)
        return false;
    for (;;) {
        if (pf->cap == 0 || pf->len == pf->cap) {
            size_t ncap = pf->cap ? pf->cap * 2 : 4096;
            char *nb = realloc(pf->buf, ncap);
            if (!nb)
                return false;
            pf->buf = nb;
            pf->cap = ncap;
        }
        /* Kernel files must be read in one go to be consistent; a buffer that
         * fills completely may have cut the file, so grow and read again. */
        ssize_t n = pread(pf->fd, pf->buf, pf->cap, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        pf->len = (size_t)n;
        if (pf->len < pf->cap)
            return true;
    }
}

void tp_procfile_close(tp_procfile *pf)
{
    if (pf->fd >= 0)
        close(pf->fd);
    free(pf->buf);
    pf->fd = -1;
    pf->buf = NULL;
    pf->cap = pf->len = 0;
}

bool tp_sysroot_read_text(const tp_sysroot *root, const char *rel, char *out, size_t cap)
{
    int fd = tp_sysroot_openat(root, rel, O_RDONLY);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, out, cap - 1);
    close(fd);
    if (n < 0)
        return false;
    out[n] = '\0';
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' '))
        out[--n] = '\0';
    return true;
}

bool tp_sysroot_read_u64(const tp_sysroot *root, const char *rel, uint64_t *out)
{
    char text[64];
    if (!tp_sysroot_read_text(root, rel, text, sizeof text))
        return false;
    const char *p = text;
    return tp_parse_u64(&p, text + strlen(text), out);
}
