/*
 * s3_xml.c - the little XML S3 speaks, read with expat: a walker that hands
 * each element's name and text to a callback, an error-document reader, and
 * escaping for the bodies we send (CompleteMultipartUpload).
 */
#include "s3/s3_internal.h"

#include <expat.h>
#include <string.h>

typedef struct walk {
    sk_s3_xml_cb cb;
    void *ud;
    sk_buf text;
    int nomem;
} walk;

static void XMLCALL on_start(void *p, const XML_Char *name, const XML_Char **attrs)
{
    walk *w = p;
    (void)attrs;
    w->text.len = 0;
    if (w->text.p) w->text.p[0] = 0;
    w->cb(w->ud, 0, name, NULL);
}

static void XMLCALL on_end(void *p, const XML_Char *name)
{
    walk *w = p;
    w->cb(w->ud, 1, name, w->text.p ? w->text.p : "");
    w->text.len = 0;
    if (w->text.p) w->text.p[0] = 0;
}

static void XMLCALL on_text(void *p, const XML_Char *s, int len)
{
    walk *w = p;
    if (sk_buf_add(&w->text, s, (size_t)len)) w->nomem = 1;
}

int sk_s3_xml_parse(const char *buf, size_t len, sk_s3_xml_cb cb, void *ud, sk_error *err)
{
    walk w = {cb, ud, {0}, 0};
    XML_Parser p = XML_ParserCreate(NULL);
    SK_FAIL_IF(!p, err, SK_E_NOMEM, "XML parser: out of memory");
    XML_SetUserData(p, &w);
    XML_SetElementHandler(p, on_start, on_end);
    XML_SetCharacterDataHandler(p, on_text);
    int ok = XML_Parse(p, buf, (int)len, 1) == XML_STATUS_OK;
    int rc = 0;
    if (!ok)
        rc = sk_error_set(err, SK_E_REMOTE, "malformed XML from the server: %s",
                          XML_ErrorString(XML_GetErrorCode(p)));
    else if (w.nomem)
        rc = sk_error_set(err, SK_E_NOMEM, "XML parser: out of memory");
    XML_ParserFree(p);
    sk_buf_free(&w.text);
    return rc;
}

typedef struct errdoc {
    char *code, *msg;
    size_t code_cap, msg_cap;
    int in_error;
} errdoc;

static void err_cb(void *ud, int end, const char *name, const char *text)
{
    errdoc *e = ud;
    if (!end) {
        if (!strcmp(name, "Error")) e->in_error = 1;
        return;
    }
    if (!e->in_error) return;
    if (!strcmp(name, "Code")) snprintf(e->code, e->code_cap, "%s", text);
    if (!strcmp(name, "Message")) snprintf(e->msg, e->msg_cap, "%s", text);
}

void sk_s3_xml_error(const char *buf, size_t len, char *code, size_t code_cap, char *msg,
                     size_t msg_cap)
{
    errdoc e = {code, msg, code_cap, msg_cap, 0};
    code[0] = msg[0] = 0;
    if (!buf || !len || !memchr(buf, '<', len)) return;
    sk_s3_xml_parse(buf, len, err_cb, &e, NULL);
}

int sk_s3_xml_escape(sk_buf *b, const char *s)
{
    for (; *s; s++) {
        const char *r = *s == '&' ? "&amp;" : *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : NULL;
        if (r ? sk_buf_add(b, r, strlen(r)) : sk_buf_add(b, s, 1)) return SK_E_NOMEM;
    }
    return 0;
}
