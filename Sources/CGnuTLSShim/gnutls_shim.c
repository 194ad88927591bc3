/* dlopen()s GnuTLS on first use and forwards the bk_gnutls_* calls (see CGnuTLSShim.h). */
#include "CGnuTLSShim.h"
#include "bk_dynamic_library.h"

#include <stdio.h>
#include <string.h>

/* Every function we use, once: the list drives the pointer table, the lookup and the checks. */
#define BK_GNUTLS_FUNCTIONS(X)                  \
    X(gnutls_x509_trust_list_init)              \
    X(gnutls_x509_trust_list_deinit)            \
    X(gnutls_x509_trust_list_add_system_trust)  \
    X(gnutls_x509_trust_list_add_trust_file)    \
    X(gnutls_x509_trust_list_verify_crt2)       \
    X(gnutls_certificate_allocate_credentials)  \
    X(gnutls_certificate_free_credentials)      \
    X(gnutls_init)                              \
    X(gnutls_deinit)                            \
    X(gnutls_set_default_priority)              \
    X(gnutls_credentials_set)                   \
    X(gnutls_server_name_set)                   \
    X(gnutls_transport_set_int2)                \
    X(gnutls_handshake_set_timeout)             \
    X(gnutls_handshake)                         \
    X(gnutls_strerror)                          \
    X(gnutls_certificate_type_get)              \
    X(gnutls_certificate_get_peers)             \
    X(gnutls_x509_crt_init)                     \
    X(gnutls_x509_crt_deinit)                   \
    X(gnutls_x509_crt_import)                   \
    X(gnutls_x509_crt_list_import)              \
    X(gnutls_record_send)                       \
    X(gnutls_record_recv)                       \
    X(gnutls_record_check_pending)              \
    X(gnutls_record_get_direction)              \
    X(gnutls_bye)

/* __typeof__ only reads the declarations: no reference to the symbols reaches the linker. */
#define BK_POINTER(name) static __typeof__(name) *p_##name;
BK_GNUTLS_FUNCTIONS(BK_POINTER)
#undef BK_POINTER

static const bk_dl_symbol symbols[] = {BK_GNUTLS_FUNCTIONS(BK_DL_REQUIRED_P)};
static const char *const sonames[] = {"libgnutls.so.30", NULL};
static bk_dl_library library = BK_DL_LIBRARY("rtmps://", sonames, "libgnutls30", symbols, NULL);

int bk_gnutls_load(void) { return bk_dl_load(&library) != NULL; }

const char *bk_gnutls_load_error(void) { return bk_dl_error(&library); }

int bk_gnutls_x509_trust_list_init(gnutls_x509_trust_list_t *list, unsigned int size) {
    return p_gnutls_x509_trust_list_init(list, size);
}
void bk_gnutls_x509_trust_list_deinit(gnutls_x509_trust_list_t list, unsigned int all) {
    p_gnutls_x509_trust_list_deinit(list, all);
}
int bk_gnutls_x509_trust_list_add_system_trust(gnutls_x509_trust_list_t list, unsigned int tl_flags,
                                               unsigned int tl_vflags) {
    return p_gnutls_x509_trust_list_add_system_trust(list, tl_flags, tl_vflags);
}
int bk_gnutls_x509_trust_list_add_trust_file(gnutls_x509_trust_list_t list, const char *ca_file,
                                             const char *crl_file, gnutls_x509_crt_fmt_t type,
                                             unsigned int tl_flags, unsigned int tl_vflags) {
    return p_gnutls_x509_trust_list_add_trust_file(list, ca_file, crl_file, type, tl_flags, tl_vflags);
}
int bk_gnutls_x509_trust_list_verify_crt2(gnutls_x509_trust_list_t list, gnutls_x509_crt_t *cert_list,
                                          unsigned int cert_list_size, gnutls_typed_vdata_st *data,
                                          unsigned int elements, unsigned int flags, unsigned int *voutput,
                                          gnutls_verify_output_function func) {
    return p_gnutls_x509_trust_list_verify_crt2(list, cert_list, cert_list_size, data, elements, flags, voutput,
                                                func);
}
int bk_gnutls_certificate_allocate_credentials(gnutls_certificate_credentials_t *res) {
    return p_gnutls_certificate_allocate_credentials(res);
}
void bk_gnutls_certificate_free_credentials(gnutls_certificate_credentials_t sc) {
    p_gnutls_certificate_free_credentials(sc);
}
int bk_gnutls_init(gnutls_session_t *session, unsigned int flags) { return p_gnutls_init(session, flags); }
void bk_gnutls_deinit(gnutls_session_t session) { p_gnutls_deinit(session); }
int bk_gnutls_set_default_priority(gnutls_session_t session) { return p_gnutls_set_default_priority(session); }
int bk_gnutls_credentials_set(gnutls_session_t session, gnutls_credentials_type_t type, void *cred) {
    return p_gnutls_credentials_set(session, type, cred);
}
int bk_gnutls_server_name_set(gnutls_session_t session, gnutls_server_name_type_t type, const void *name,
                              size_t name_length) {
    return p_gnutls_server_name_set(session, type, name, name_length);
}
void bk_gnutls_transport_set_int2(gnutls_session_t session, int recv_fd, int send_fd) {
    p_gnutls_transport_set_int2(session, recv_fd, send_fd);
}
void bk_gnutls_handshake_set_timeout(gnutls_session_t session, unsigned int ms) {
    p_gnutls_handshake_set_timeout(session, ms);
}
int bk_gnutls_handshake(gnutls_session_t session) { return p_gnutls_handshake(session); }
const char *bk_gnutls_strerror(int error) { return p_gnutls_strerror(error); }
gnutls_certificate_type_t bk_gnutls_certificate_type_get(gnutls_session_t session) {
    return p_gnutls_certificate_type_get(session);
}
const gnutls_datum_t *bk_gnutls_certificate_get_peers(gnutls_session_t session, unsigned int *list_size) {
    return p_gnutls_certificate_get_peers(session, list_size);
}
int bk_gnutls_x509_crt_init(gnutls_x509_crt_t *cert) { return p_gnutls_x509_crt_init(cert); }
void bk_gnutls_x509_crt_deinit(gnutls_x509_crt_t cert) { p_gnutls_x509_crt_deinit(cert); }
int bk_gnutls_x509_crt_import(gnutls_x509_crt_t cert, const gnutls_datum_t *data, gnutls_x509_crt_fmt_t format) {
    return p_gnutls_x509_crt_import(cert, data, format);
}
int bk_gnutls_x509_crt_list_import(gnutls_x509_crt_t *certs, unsigned int *cert_max, const gnutls_datum_t *data,
                                   gnutls_x509_crt_fmt_t format, unsigned int flags) {
    return p_gnutls_x509_crt_list_import(certs, cert_max, data, format, flags);
}
ssize_t bk_gnutls_record_send(gnutls_session_t session, const void *data, size_t data_size) {
    return p_gnutls_record_send(session, data, data_size);
}
ssize_t bk_gnutls_record_recv(gnutls_session_t session, void *data, size_t data_size) {
    return p_gnutls_record_recv(session, data, data_size);
}
size_t bk_gnutls_record_check_pending(gnutls_session_t session) { return p_gnutls_record_check_pending(session); }
int bk_gnutls_record_get_direction(gnutls_session_t session) { return p_gnutls_record_get_direction(session); }
int bk_gnutls_bye(gnutls_session_t session, gnutls_close_request_t how) { return p_gnutls_bye(session, how); }
