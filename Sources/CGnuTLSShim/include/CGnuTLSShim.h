/* GnuTLS reached at run time: the library is dlopen()ed on the first rtmps:// connection, so
   a plain rtmp:// process never maps libgnutls, nettle, hogweed, p11-kit, tasn1, idn2 or
   unistring (their resident pages count in VmHWM and the memory budget).

   GnuTLS's headers only declare types, constants and functions; nothing here or in them makes
   the linker pull the library in (this target links nothing). Swift calls the bk_gnutls_*
   wrappers below, never gnutls_* directly: a direct call would be an undefined symbol at link
   time, so a slip cannot quietly bring the library back. */
#ifndef CGNUTLS_SHIM_H
#define CGNUTLS_SHIM_H

#include <stddef.h>
#include <sys/types.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

/* Loads libgnutls.so.30 and resolves every function below, once per process (thread-safe).
   Returns 1 when GnuTLS is usable; 0 otherwise, with a one-line reason in bk_gnutls_load_error(). */
int bk_gnutls_load(void);
/* Why the last bk_gnutls_load() failed ("" after success). */
const char *bk_gnutls_load_error(void);

/* Same signatures and meaning as the gnutls_* functions of the same name. Only call them after
   bk_gnutls_load() returned 1. */
int bk_gnutls_x509_trust_list_init(gnutls_x509_trust_list_t *list, unsigned int size);
void bk_gnutls_x509_trust_list_deinit(gnutls_x509_trust_list_t list, unsigned int all);
int bk_gnutls_x509_trust_list_add_system_trust(gnutls_x509_trust_list_t list, unsigned int tl_flags,
                                               unsigned int tl_vflags);
int bk_gnutls_x509_trust_list_add_trust_file(gnutls_x509_trust_list_t list, const char *ca_file,
                                             const char *crl_file, gnutls_x509_crt_fmt_t type,
                                             unsigned int tl_flags, unsigned int tl_vflags);
int bk_gnutls_x509_trust_list_verify_crt2(gnutls_x509_trust_list_t list, gnutls_x509_crt_t *cert_list,
                                          unsigned int cert_list_size, gnutls_typed_vdata_st *data,
                                          unsigned int elements, unsigned int flags, unsigned int *voutput,
                                          gnutls_verify_output_function func);
int bk_gnutls_certificate_allocate_credentials(gnutls_certificate_credentials_t *res);
void bk_gnutls_certificate_free_credentials(gnutls_certificate_credentials_t sc);
int bk_gnutls_init(gnutls_session_t *session, unsigned int flags);
void bk_gnutls_deinit(gnutls_session_t session);
int bk_gnutls_set_default_priority(gnutls_session_t session);
int bk_gnutls_credentials_set(gnutls_session_t session, gnutls_credentials_type_t type, void *cred);
int bk_gnutls_server_name_set(gnutls_session_t session, gnutls_server_name_type_t type, const void *name,
                              size_t name_length);
void bk_gnutls_transport_set_int2(gnutls_session_t session, int recv_fd, int send_fd);
void bk_gnutls_handshake_set_timeout(gnutls_session_t session, unsigned int ms);
int bk_gnutls_handshake(gnutls_session_t session);
const char *bk_gnutls_strerror(int error);
gnutls_certificate_type_t bk_gnutls_certificate_type_get(gnutls_session_t session);
const gnutls_datum_t *bk_gnutls_certificate_get_peers(gnutls_session_t session, unsigned int *list_size);
int bk_gnutls_x509_crt_init(gnutls_x509_crt_t *cert);
void bk_gnutls_x509_crt_deinit(gnutls_x509_crt_t cert);
int bk_gnutls_x509_crt_import(gnutls_x509_crt_t cert, const gnutls_datum_t *data, gnutls_x509_crt_fmt_t format);
int bk_gnutls_x509_crt_list_import(gnutls_x509_crt_t *certs, unsigned int *cert_max, const gnutls_datum_t *data,
                                   gnutls_x509_crt_fmt_t format, unsigned int flags);
ssize_t bk_gnutls_record_send(gnutls_session_t session, const void *data, size_t data_size);
ssize_t bk_gnutls_record_recv(gnutls_session_t session, void *data, size_t data_size);
size_t bk_gnutls_record_check_pending(gnutls_session_t session);
/* After GNUTLS_E_AGAIN: 0 when GnuTLS waits to read, 1 when it waits to write. */
int bk_gnutls_record_get_direction(gnutls_session_t session);
int bk_gnutls_bye(gnutls_session_t session, gnutls_close_request_t how);

#endif
