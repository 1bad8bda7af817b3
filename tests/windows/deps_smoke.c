/* Every dependency built for Windows, used for real in one program that runs under
   Wine: a round trip through each compressor, SQL with FTS5 and JSON, an XML parse,
   decimal arithmetic, a call through libffi, a SHA-256 from OpenSSL, and a Tcl
   interpreter evaluating a script, asked by Tk for its main window (none yet). Each line says
   what was computed, so that the test compares values, not mere success. */
#include <stdio.h>
#include <string.h>

#include <bzlib.h>
#include <expat.h>
#include <ffi.h>
#include <lzma.h>
#include <mpdecimal.h>
#include <openssl/evp.h>
#include <sqlite3.h>
#include <tcl.h>
#include <tk.h>
#include <zlib.h>
#include <zstd.h>

static const char TEXT[] = "pyfreight carries CPython to Windows, pyfreight carries CPython to Windows";

static int zlib_round_trip(void) {
    unsigned char packed[256], back[256];
    uLongf packed_size = sizeof packed, back_size = sizeof back;
    if (compress(packed, &packed_size, (const Bytef *)TEXT, sizeof TEXT) != Z_OK) return 0;
    if (uncompress(back, &back_size, packed, packed_size) != Z_OK) return 0;
    return back_size == sizeof TEXT && memcmp(back, TEXT, sizeof TEXT) == 0;
}

static int bzip2_round_trip(void) {
    char packed[512], back[256];
    unsigned int packed_size = sizeof packed, back_size = sizeof back;
    if (BZ2_bzBuffToBuffCompress(packed, &packed_size, (char *)TEXT, sizeof TEXT, 9, 0, 0) != BZ_OK) return 0;
    if (BZ2_bzBuffToBuffDecompress(back, &back_size, packed, packed_size, 0, 0) != BZ_OK) return 0;
    return back_size == sizeof TEXT && memcmp(back, TEXT, sizeof TEXT) == 0;
}

static int xz_round_trip(void) {
    uint8_t packed[512], back[256];
    size_t packed_size = 0, in_pos = 0, back_size = 0;
    uint64_t limit = UINT64_MAX;
    if (lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, NULL, (const uint8_t *)TEXT, sizeof TEXT, packed,
                                &packed_size, sizeof packed) != LZMA_OK) return 0;
    if (lzma_stream_buffer_decode(&limit, 0, NULL, packed, &in_pos, packed_size, back, &back_size,
                                  sizeof back) != LZMA_OK) return 0;
    return back_size == sizeof TEXT && memcmp(back, TEXT, sizeof TEXT) == 0;
}

static int zstd_round_trip(void) {
    char packed[512], back[256];
    size_t packed_size = ZSTD_compress(packed, sizeof packed, TEXT, sizeof TEXT, 19);
    if (ZSTD_isError(packed_size)) return 0;
    size_t back_size = ZSTD_decompress(back, sizeof back, packed, packed_size);
    return !ZSTD_isError(back_size) && back_size == sizeof TEXT && memcmp(back, TEXT, sizeof TEXT) == 0;
}

static int print_row(void *unused, int columns, char **values, char **names) {
    (void)unused; (void)names;
    for (int i = 0; i < columns; i++) printf("%s%s", i ? "|" : "sqlite ", values[i] ? values[i] : "NULL");
    printf("\n");
    return 0;
}

static void sqlite(void) {
    sqlite3 *db;
    sqlite3_open(":memory:", &db);
    const char *sql =
        "CREATE VIRTUAL TABLE notes USING fts5(body);"
        "INSERT INTO notes VALUES ('relocatable interpreters'), ('static libraries');"
        "SELECT sqlite_version() IS NOT NULL, (SELECT body FROM notes WHERE notes MATCH 'static'),"
        " json_extract('{\"a\": [1, 2, 3]}', '$.a[2]');";
    char *error = NULL;
    if (sqlite3_exec(db, sql, print_row, NULL, &error) != SQLITE_OK) printf("sqlite error %s\n", error);
    sqlite3_close(db);
}

static void XMLCALL count_element(void *data, const XML_Char *name, const XML_Char **attributes) {
    (void)name; (void)attributes;
    ++*(int *)data;
}

static int expat_elements(void) {
    static const char doc[] = "<a><b/><c><d/></c></a>";
    int count = 0;
    XML_Parser parser = XML_ParserCreate(NULL);
    XML_SetUserData(parser, &count);
    XML_SetStartElementHandler(parser, count_element);
    int ok = XML_Parse(parser, doc, (int)strlen(doc), 1) == XML_STATUS_OK;
    XML_ParserFree(parser);
    return ok ? count : -1;
}

static void decimal(void) {
    mpd_context_t ctx;
    mpd_init(&ctx, 30);
    mpd_t *one = mpd_new(&ctx), *seven = mpd_new(&ctx), *quotient = mpd_new(&ctx);
    mpd_set_string(one, "1", &ctx);
    mpd_set_string(seven, "7", &ctx);
    mpd_div(quotient, one, seven, &ctx);
    char *text = mpd_to_sci(quotient, 0);
    printf("mpdecimal %s\n", text);
    mpd_free(text);
    mpd_del(one); mpd_del(seven); mpd_del(quotient);
}

static long long add3(int a, long long b, double c) { return a + b + (long long)c; }

static long long ffi_add(void) {
    ffi_cif cif;
    ffi_type *types[] = {&ffi_type_sint, &ffi_type_sint64, &ffi_type_double};
    int a = 40; long long b = 2000000000000LL; double c = 2.0;
    void *values[] = {&a, &b, &c};
    ffi_arg result = 0;
    if (ffi_prep_cif(&cif, FFI_DEFAULT_ABI, 3, &ffi_type_sint64, types) != FFI_OK) return -1;
    ffi_call(&cif, FFI_FN(add3), &result, values);
    return (long long)result;
}

static void sha256(void) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    EVP_Digest("abc", 3, digest, &size, EVP_sha256(), NULL);
    printf("openssl %s ", OpenSSL_version(OPENSSL_VERSION_STRING));
    for (unsigned int i = 0; i < size; i++) printf("%02x", digest[i]);
    printf("\n");
}

static void tcl(void) {
    Tcl_FindExecutable(NULL);
    Tcl_Interp *interp = Tcl_CreateInterp();
    Tcl_Eval(interp, "expr {6 * 7}");
    printf("tcl %s", Tcl_GetStringResult(interp));
    Tcl_Eval(interp, "info patchlevel");
    printf(" %s %d\n", Tcl_GetStringResult(interp), Tk_MainWindow(interp) == NULL);
    Tcl_DeleteInterp(interp);
}

int main(void) {
    printf("zlib %s %d\n", zlibVersion(), zlib_round_trip());
    printf("bzip2 %d\n", bzip2_round_trip());
    printf("xz %s %d\n", lzma_version_string(), xz_round_trip());
    printf("zstd %s %d\n", ZSTD_versionString(), zstd_round_trip());
    sqlite();
    printf("expat %d\n", expat_elements());
    decimal();
    printf("libffi %lld\n", ffi_add());
    sha256();
    tcl();
    return 0;
}
